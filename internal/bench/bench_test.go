package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/bench"
	"github.com/restarea/restarea/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestQuickRun is the CI smoke mode: `restarea bench --local 3 --quick`
// in-process. It checks only functional facts — every phase ran, the
// replay storm stored exactly its 1,000 originals and nothing more, the
// seeded stores hold what was seeded — never a timing.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes; skipped with -short")
	}
	bin := testkit.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, bench.Options{
		Binary: bin, Local: 3, Dir: t.TempDir(), Quick: true, Growth: true, Logf: t.Logf,
	})
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	rep.WriteTable(testWriter{t})
	if rep.FsyncPerSec <= 0 {
		t.Errorf("fsync rate %v, want > 0", rep.FsyncPerSec)
	}
	if len(rep.Posts) != 7 {
		t.Errorf("%d post figures, want 7 (REST at 1, 8, 16, 64 clients, MCP at 1, 8, 64)", len(rep.Posts))
	}
	if p := rep.Pinned; p == nil || p.Leader.Ops == 0 || p.Follower.Ops == 0 {
		t.Errorf("one client on the leader and on a follower: %+v", p)
	}
	if s := rep.Single; s == nil || s.Ops == 0 {
		t.Errorf("single node: %+v", s)
	}
	for _, p := range rep.Posts {
		if p.Ops == 0 {
			t.Errorf("%s at %d clients: no post succeeded (%s)", p.Channel, p.Clients, p.ErrorSample)
		}
	}
	r := rep.Replay
	if r == nil {
		t.Fatal("no replay storm figure")
	}
	if got := r.StoredAfter - r.StoredBefore - r.NewPosts; got != 1000 || r.Mismatches != 0 || !r.Exact {
		t.Errorf("replay storm: %d entries stored for 1,000 request_ids, %d mismatched answers (sample: %s)", got, r.Mismatches, r.ErrorSample)
	}
	if r.Ops == 0 {
		t.Error("replay storm: no replay answered")
	}
	if rep.Reads == nil || rep.Reads.GetThread.Ops == 0 || rep.Reads.ListReplies.Ops == 0 {
		t.Errorf("reads on a follower: %+v", rep.Reads)
	}
	if len(rep.Growth) != 2 {
		t.Fatalf("%d growth figures, want 2", len(rep.Growth))
	}
	for _, g := range rep.Growth {
		if g.StoredAfter < g.Seeded+g.Posts.Ops {
			t.Errorf("seeded node: %d stored, want at least %d seeded + %d posted", g.StoredAfter, g.Seeded, g.Posts.Ops)
		}
	}
	if p := rep.Growth[1].Paging; p == nil || p.ThreadReplies != 1000 || p.K != 20 {
		t.Errorf("paging the seeded thread: %+v, want 1000 replies in 20 pages", p)
	}
	path := filepath.Join(t.TempDir(), "report.json")
	if err := rep.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Errorf("report not written: %v", err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
