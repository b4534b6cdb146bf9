package bench

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// breakdownRules name the components of a CPU profile. A sample belongs
// to the first rule one of whose substrings occurs in the name of any
// function of its stack (inlined frames included); a sample no rule
// matches is componentOther.
var breakdownRules = []struct {
	name string
	subs []string
}{
	{"search index", []string{"internal/search", "blevesearch"}},
	{"state machine", []string{"raftFSM", "fsm.(*FSM).ApplyBatch", "fsm.(*FSM).flush", "fsm.(*FSM).Flush", "fsm.(*FSM).commitLater"}},
	{"raft log store", []string{"StoreLogs"}},
	{"forward (send)", []string{"sendForwards", "sendBatch"}},
	{"forward (leader side)", []string{"serveApplyBatch", "cluster.InternalHandler", "cluster.(*Guard)", "cluster.applyAll"}},
	{"client API", []string{"restarea/api.", "restarea/mcp.", "NoSniff"}},
	{"raft replication (send)", []string{"(*Raft).replicate", "(*Raft).heartbeat", "genericRPC", "(*NetworkTransport).AppendEntries"}},
	{"raft RPC (receive)", []string{"handleConn", "handleCommand", "(*Raft).appendEntries", "processRPC"}},
	{"raft other", []string{"hashicorp/raft"}},
	{"HTTP server/client", []string{"net/http"}},
	{"GC", []string{"gcBgMarkWorker", "runtime.gcDrain", "runtime.bgsweep", "runtime.bgscavenge", "runtime.markroot"}},
	{"scheduler", []string{"runtime.schedule", "runtime.findRunnable", "runtime.mcall", "runtime.park_m", "runtime.netpoll", "runtime.sysmon"}},
}

const componentOther = "other"

// classify returns the component of a stack given as its function names.
func classify(funcs []string) string {
	for _, r := range breakdownRules {
		for _, s := range r.subs {
			for _, f := range funcs {
				if strings.Contains(f, s) {
					return r.name
				}
			}
		}
	}
	return componentOther
}

// profileCPU reads the CPU profile at path and returns its nanoseconds of
// CPU by component (the "cpu" sample type; the last one if none is).
func profileCPU(path string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, err
	}
	if len(p.SampleType) == 0 {
		return nil, fmt.Errorf("%s: no sample types", path)
	}
	vi := len(p.SampleType) - 1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			vi = i
		}
	}
	out := map[string]int64{}
	var funcs []string
	for _, s := range p.Sample {
		funcs = funcs[:0]
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				if ln.Function != nil {
					funcs = append(funcs, ln.Function.Name)
				}
			}
		}
		if vi < len(s.Value) {
			out[classify(funcs)] += s.Value[vi]
		}
	}
	return out, nil
}

// ProfileBreakdown is where the nodes' CPU went during the profiled
// phases, in microseconds of CPU per acknowledged post of the phase: each
// cluster node, their sum, and the single node under the same load.
type ProfileBreakdown struct {
	// Leader is the cluster node (1-based) that led after the profiled
	// phase; 0 when unknown.
	Leader int `json:"leader,omitempty"`
	// ClusterPosts and SinglePosts are the posts acknowledged during
	// each profiled phase: the divisors of every figure.
	ClusterPosts int `json:"cluster_posts"`
	SinglePosts  int `json:"single_posts"`
	// NodeProfiled says which cluster nodes' profiles were read; a node
	// without one counts 0 in its column and in the cluster sum.
	NodeProfiled   []bool `json:"node_profiled"`
	SingleProfiled bool   `json:"single_profiled"`
	// Rows are the components with any CPU, by cluster sum descending;
	// Total is their sum.
	Rows  []BreakdownRow `json:"rows"`
	Total BreakdownRow   `json:"total"`
}

// BreakdownRow is one component's CPU in µs per acknowledged post.
type BreakdownRow struct {
	Component string `json:"component"`
	// NodesUs has one figure per cluster node, node 1 first.
	NodesUs   []float64 `json:"nodes_us_per_post"`
	ClusterUs float64   `json:"cluster_us_per_post"`
	SingleUs  float64   `json:"single_us_per_post"`
	// ClusterToSingle is ClusterUs / SingleUs, 0 when SingleUs is 0.
	ClusterToSingle float64 `json:"cluster_to_single"`
}

// newBreakdown reads the cluster nodes' profiles (clusterPaths, indexed
// by node, "" where none was written) and the single node's (singlePath,
// "" if none) and divides them by the posts of their phases. A profile
// that cannot be read, or a phase without posts, is reported through logf
// and left out; with nothing left, newBreakdown returns nil.
func newBreakdown(clusterPaths []string, clusterOps int, singlePath string, singleOps int, leader int, logf func(string, ...any)) *ProfileBreakdown {
	b := &ProfileBreakdown{Leader: leader, ClusterPosts: clusterOps, SinglePosts: singleOps, NodeProfiled: make([]bool, len(clusterPaths))}
	read := func(path string, ops int) map[string]int64 {
		if path == "" {
			return nil
		}
		if ops <= 0 {
			logf("  CPU breakdown: no post acknowledged while %s was taken; left out", path)
			return nil
		}
		m, err := profileCPU(path)
		if err != nil {
			logf("  CPU breakdown: %v; left out", err)
		}
		return m
	}
	nodes := make([]map[string]int64, len(clusterPaths))
	for i, p := range clusterPaths {
		nodes[i] = read(p, clusterOps)
		b.NodeProfiled[i] = nodes[i] != nil
	}
	single := read(singlePath, singleOps)
	b.SingleProfiled = single != nil
	us := func(ns int64, ops int) float64 { return float64(ns) / 1e3 / float64(ops) }

	b.Total = BreakdownRow{Component: "total", NodesUs: make([]float64, len(nodes))}
	var names []string
	for _, r := range breakdownRules {
		names = append(names, r.name)
	}
	names = append(names, componentOther)
	for _, name := range names {
		row := BreakdownRow{Component: name, NodesUs: make([]float64, len(nodes))}
		seen := false
		for i, m := range nodes {
			if m[name] > 0 {
				row.NodesUs[i] = us(m[name], clusterOps)
				row.ClusterUs += row.NodesUs[i]
				b.Total.NodesUs[i] += row.NodesUs[i]
				seen = true
			}
		}
		if single[name] > 0 {
			row.SingleUs = us(single[name], singleOps)
			seen = true
		}
		if seen {
			row.ClusterToSingle = ratio(row.ClusterUs, row.SingleUs)
			b.Rows = append(b.Rows, row)
			b.Total.ClusterUs += row.ClusterUs
			b.Total.SingleUs += row.SingleUs
		}
	}
	if !b.SingleProfiled && !anyTrue(b.NodeProfiled) {
		return nil
	}
	b.Total.ClusterToSingle = ratio(b.Total.ClusterUs, b.Total.SingleUs)
	sort.SliceStable(b.Rows, func(i, j int) bool { return b.Rows[i].ClusterUs > b.Rows[j].ClusterUs })
	return b
}

func anyTrue(v []bool) bool {
	for _, x := range v {
		if x {
			return true
		}
	}
	return false
}

// WriteTable prints the breakdown as a table of µs of CPU per post, one
// row per component then the total; "—" marks a profile not read.
func (b *ProfileBreakdown) WriteTable(w io.Writer) {
	leader := ""
	if b.Leader > 0 {
		leader = fmt.Sprintf(", leader node%d", b.Leader)
	}
	fmt.Fprintf(w, "CPU µs per acknowledged post, from the profiles (cluster: %d posts%s; single node: %d posts)\n", b.ClusterPosts, leader, b.SinglePosts)
	fmt.Fprintf(w, "%-24s", "component")
	for i := range b.NodeProfiled {
		h := fmt.Sprintf("node%d", i+1)
		if i+1 == b.Leader {
			h += "(L)"
		}
		fmt.Fprintf(w, " %9s", h)
	}
	fmt.Fprintf(w, " %9s %9s %8s\n", "cluster", "single", "ratio")
	cell := func(v float64, ok bool) string {
		if !ok {
			return "—"
		}
		return fmt.Sprintf("%.1f", v)
	}
	rows := append(b.Rows[:len(b.Rows):len(b.Rows)], b.Total)
	for _, r := range rows {
		fmt.Fprintf(w, "%-24s", r.Component)
		for i, v := range r.NodesUs {
			fmt.Fprintf(w, " %9s", cell(v, b.NodeProfiled[i]))
		}
		ra := "—"
		if r.ClusterToSingle > 0 {
			ra = fmt.Sprintf("%.2f", r.ClusterToSingle)
		}
		fmt.Fprintf(w, " %9s %9s %8s\n", cell(r.ClusterUs, anyTrue(b.NodeProfiled)), cell(r.SingleUs, b.SingleProfiled), ra)
	}
}

// logTable sends the table through logf, one line per call.
func (b *ProfileBreakdown) logTable(logf func(string, ...any)) {
	var sb strings.Builder
	b.WriteTable(&sb)
	for _, ln := range strings.Split(strings.TrimRight(sb.String(), "\n"), "\n") {
		logf("  %s", ln)
	}
}
