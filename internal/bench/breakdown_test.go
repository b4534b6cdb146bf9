package bench

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// writeProfile writes a CPU profile whose samples have the given stacks
// (function names, innermost first; "a|b" is one location with b inlined
// into a's frame, a innermost) and CPU nanoseconds.
func writeProfile(t *testing.T, path string, stacks [][]string, ns []int64) {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	funcs := map[string]*profile.Function{}
	fn := func(name string) *profile.Function {
		if f, ok := funcs[name]; ok {
			return f
		}
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name}
		funcs[name] = f
		p.Function = append(p.Function, f)
		return f
	}
	for i, st := range stacks {
		s := &profile.Sample{Value: []int64{ns[i] / 10_000_000, ns[i]}}
		for _, frame := range st {
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Address: uint64(0x1000 + len(p.Location))}
			for _, name := range strings.Split(frame, "|") {
				loc.Line = append(loc.Line, profile.Line{Function: fn(name), Line: 1})
			}
			p.Location = append(p.Location, loc)
			s.Location = append(s.Location, loc)
		}
		p.Sample = append(p.Sample, s)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		stack []string
		want  string
	}{
		{[]string{"github.com/blevesearch/bleve/v2.(*indexImpl).Batch", "net/http.(*conn).serve"}, "search index"},
		// The first matching rule wins, wherever in the stack it matches.
		{[]string{"github.com/hashicorp/raft.(*Raft).runFSM", "github.com/restarea/restarea/node.raftFSM.ApplyBatch"}, "state machine"},
		{[]string{"net/http.(*conn).serve", "github.com/restarea/restarea/api.(*Server).createEntry"}, "client API"},
		{[]string{"github.com/hashicorp/raft.(*Raft).replicateTo", "github.com/hashicorp/raft.(*Raft).replicate"}, "raft replication (send)"},
		{[]string{"github.com/hashicorp/raft.(*Raft).processRPC"}, "raft RPC (receive)"},
		{[]string{"github.com/hashicorp/raft.(*Raft).runLeader"}, "raft other"},
		{[]string{"runtime.gcBgMarkWorker"}, "GC"},
		{[]string{"runtime.findRunnable", "runtime.schedule"}, "scheduler"},
		{[]string{"main.main"}, "other"},
		{nil, "other"},
	} {
		if got := classify(tc.stack); got != tc.want {
			t.Errorf("classify(%q) = %q, want %q", tc.stack, got, tc.want)
		}
	}
}

func TestBreakdown(t *testing.T) {
	dir := t.TempDir()
	n1, n3, single := filepath.Join(dir, "c1.pprof"), filepath.Join(dir, "c3.pprof"), filepath.Join(dir, "s.pprof")
	// Node 1: 4 ms of search (reached through an inlined frame), 2 ms of
	// HTTP, 1 ms of GC, 1 ms unclassified.
	writeProfile(t, n1, [][]string{
		{"github.com/restarea/restarea/internal/search.(*Index).Add|github.com/restarea/restarea/node.raftFSM.ApplyBatch", "github.com/hashicorp/raft.(*Raft).runFSM"},
		{"net/http.(*conn).serve"},
		{"runtime.gcBgMarkWorker"},
		{"syscall.Syscall", "main.main"},
	}, []int64{4e6, 2e6, 1e6, 1e6})
	// Node 3: 3 ms of HTTP.
	writeProfile(t, n3, [][]string{{"net/http.(*persistConn).readLoop"}}, []int64{3e6})
	// The single node: 2 ms of search, 1 ms of HTTP, for half the posts.
	writeProfile(t, single, [][]string{
		{"github.com/blevesearch/zapx/v17.(*Segment).Load"},
		{"net/http.(*conn).serve"},
	}, []int64{2e6, 1e6})

	var logged []string
	logf := func(format string, a ...any) { logged = append(logged, format) }
	// Node 2 wrote no profile; node 4's cannot be read.
	b := newBreakdown([]string{n1, "", n3, filepath.Join(dir, "missing.pprof")}, 1000, single, 500, 3, logf)
	if b == nil {
		t.Fatal("no breakdown")
	}
	if want := []bool{true, false, true, false}; !slices.Equal(b.NodeProfiled, want) || !b.SingleProfiled {
		t.Errorf("profiled nodes %v (single %v), want %v (single true)", b.NodeProfiled, b.SingleProfiled, want)
	}
	if len(logged) != 1 {
		t.Errorf("logged %q, want one line for the unreadable profile", logged)
	}
	// µs per post: ns / 1000 / posts.
	want := []BreakdownRow{
		{Component: "HTTP server/client", NodesUs: []float64{2, 0, 3, 0}, ClusterUs: 5, SingleUs: 2, ClusterToSingle: 2.5},
		{Component: "search index", NodesUs: []float64{4, 0, 0, 0}, ClusterUs: 4, SingleUs: 4, ClusterToSingle: 1},
		{Component: "GC", NodesUs: []float64{1, 0, 0, 0}, ClusterUs: 1},
		{Component: "other", NodesUs: []float64{1, 0, 0, 0}, ClusterUs: 1},
	}
	if len(b.Rows) != len(want) {
		t.Fatalf("rows %+v, want %+v", b.Rows, want)
	}
	for i, w := range want {
		if !equalRow(b.Rows[i], w) {
			t.Errorf("row %d = %+v, want %+v", i, b.Rows[i], w)
		}
	}
	if tw := (BreakdownRow{Component: "total", NodesUs: []float64{8, 0, 3, 0}, ClusterUs: 11, SingleUs: 6, ClusterToSingle: 11.0 / 6}); !equalRow(b.Total, tw) {
		t.Errorf("total = %+v, want %+v", b.Total, tw)
	}

	var sb strings.Builder
	b.WriteTable(&sb)
	out := sb.String()
	t.Log("\n" + out)
	for _, s := range []string{"node3(L)", "HTTP server/client", "—", "total", "1.83"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}

	if b := newBreakdown([]string{"", ""}, 1000, "", 0, 0, logf); b != nil {
		t.Errorf("breakdown without profiles: %+v, want nil", b)
	}
	if b := newBreakdown([]string{n1}, 0, "", 0, 0, logf); b != nil {
		t.Errorf("breakdown of a phase without posts: %+v, want nil", b)
	}
}

func equalRow(a, b BreakdownRow) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	if a.Component != b.Component || len(a.NodesUs) != len(b.NodesUs) ||
		!near(a.ClusterUs, b.ClusterUs) || !near(a.SingleUs, b.SingleUs) || !near(a.ClusterToSingle, b.ClusterToSingle) {
		return false
	}
	for i := range a.NodesUs {
		if !near(a.NodesUs[i], b.NodesUs[i]) {
			return false
		}
	}
	return true
}
