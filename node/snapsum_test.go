package node_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// snapshotted runs a single node that writes two snapshots, each after
// posts of its own, plus posts only the log holds, and stops it. It
// returns the node's configuration, the posts' requests and the newest
// snapshot's id and index.
func snapshotted(t *testing.T) (server.Config, []restarea.PostRequest, node.InspectedSnapshot) {
	t.Helper()
	cfg := testnode.Config(t, testnode.WithDataDir(t.TempDir()))
	n := testnode.StartConfig(t, cfg)
	ctx := context.Background()
	meta := restarea.PostMeta{Source: "192.0.2.1", Channel: restarea.ChannelHTTP}
	var reqs []restarea.PostRequest
	for round := 0; round < 3; round++ {
		for i := 0; i < 3; i++ {
			req := testkit.Question("What does a checksum cover?")
			if _, err := n.Post(ctx, req, meta); err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, req)
		}
		if round < 2 {
			if err := n.TakeSnapshot(); err != nil {
				t.Fatalf("snapshot %d: %v", round, err)
			}
		}
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	in, err := node.Inspect(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	if dirs, _ := filepath.Glob(filepath.Join(cfg.DataDir, "snapshots", "*", "checksums.json")); len(dirs) != 2 || in.Snapshot == nil {
		t.Fatalf("snapshots with their checksums: %v; newest %+v", dirs, in.Snapshot)
	}
	return cfg, reqs, *in.Snapshot
}

// wantCorrupt checks that err is a *fsm.CorruptError naming file at index.
func wantCorrupt(t *testing.T, err error, file string, index uint64) *fsm.CorruptError {
	t.Helper()
	var ce *fsm.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("start on a damaged snapshot: %v, want a CorruptError", err)
	}
	if ce.File != file || ce.Index != index || ce.Want == ce.Got {
		t.Fatalf("damage reported: %+v, want file %s at index %d", ce, file, index)
	}
	return ce
}

// A flipped byte in the newest snapshot's meta.json — which raft does not
// check, and would skip silently if it no longer parsed, falling back on
// the older snapshot — stops the start, naming the file; so does
// `restarea inspect`.
func TestDamagedSnapshotMetaStopsTheStart(t *testing.T) {
	cfg, _, snap := snapshotted(t)
	testkit.RotMiddle(t, filepath.Join(cfg.DataDir, "snapshots", snap.ID, "meta.json"))
	file := "snapshots/" + snap.ID + "/meta.json"
	_, err := server.Start(cfg)
	wantCorrupt(t, err, file, snap.Index)
	_, err = node.Inspect(cfg.DataDir)
	wantCorrupt(t, err, file, snap.Index)
}

// A flipped byte in the newest snapshot's state.bin is found by raft's
// CRC-64 when it opens the snapshot — here to restore it on start, the
// state file being lost — before any byte reaches the state machine. The
// start stops with the damage named, rather than restoring the older
// snapshot as raft alone would.
func TestDamagedSnapshotStateStopsTheNode(t *testing.T) {
	cfg, _, snap := snapshotted(t)
	testkit.RotMiddle(t, filepath.Join(cfg.DataDir, "snapshots", snap.ID, "state.bin"))
	if err := os.Remove(filepath.Join(cfg.DataDir, "state.db")); err != nil {
		t.Fatal(err)
	}
	_, err := server.Start(cfg)
	wantCorrupt(t, err, "snapshots/"+snap.ID+"/state.bin", snap.Index)
}

// Snapshots written by an earlier release have no checksums file: they
// are restored as before.
func TestSnapshotWithoutChecksumsRestores(t *testing.T) {
	cfg, reqs, _ := snapshotted(t)
	sums, _ := filepath.Glob(filepath.Join(cfg.DataDir, "snapshots", "*", "checksums.json"))
	for _, f := range sums {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	// Without the state file the node restores the newest snapshot and
	// replays the log after it.
	if err := os.Remove(filepath.Join(cfg.DataDir, "state.db")); err != nil {
		t.Fatal(err)
	}
	n := testnode.StartConfig(t, cfg)
	ctx := context.Background()
	meta := restarea.PostMeta{Source: "192.0.2.1", Channel: restarea.ChannelHTTP}
	for _, req := range reqs {
		res, err := n.Post(ctx, req, meta)
		if err != nil || !res.Replayed {
			t.Fatalf("post %s after the restore: %+v %v", req.RequestID, res, err)
		}
	}
}

// A flipped byte in a segment file of a stopped node's search index is
// found when the node starts: the index is rebuilt from the state (it is
// derived from it), the log names the file, the damage is counted, and a
// search finds every post again.
func TestDamagedSearchIndexIsRebuilt(t *testing.T) {
	var logs testkit.SyncBuffer
	cfg := testnode.Config(t, testnode.WithDataDir(t.TempDir()), testnode.WithConfig(func(c *server.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	}))
	n := testnode.StartConfig(t, cfg)
	ctx := context.Background()
	meta := restarea.PostMeta{Source: "192.0.2.1", Channel: restarea.ChannelHTTP}
	want := map[string]bool{}
	for i := 0; i < 20; i++ {
		req := searchQuestion(fmt.Sprintf("Rotten segment %d", i), "a bit flipped on the disk", "rot")
		res, err := n.Post(ctx, req, meta)
		if err != nil {
			t.Fatal(err)
		}
		want[res.Entry.ID] = true
	}
	found := func(n *node.Node) error {
		p, err := n.Search(ctx, restarea.SearchQuery{Q: "flipped disk", Limit: 50, Source: "192.0.2.1"})
		if err != nil {
			return err
		}
		if len(p.Results) != len(want) {
			return fmt.Errorf("%d results, want %d", len(p.Results), len(want))
		}
		for _, r := range p.Results {
			if !want[r.ID] {
				return fmt.Errorf("unexpected result %s", r.ID)
			}
		}
		return nil
	}
	testkit.Eventually(t, 20*time.Second, "the posts to be found", func() error { return found(n) })
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(cfg.DataDir, "search", "index", "store", "*.zap"))
	if len(segs) == 0 {
		t.Fatal("no segment file was written")
	}
	for _, s := range segs {
		testkit.RotMiddle(t, s)
	}

	logs.Reset()
	n = testnode.StartConfig(t, cfg)
	testkit.Eventually(t, 20*time.Second, "the posts to be found after the rebuild", func() error { return found(n) })
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "search index damaged") {
			line = l
		}
	}
	named := false
	for _, s := range segs {
		named = named || strings.Contains(line, filepath.Base(s))
	}
	if !strings.Contains(line, `"level":"WARN"`) || !named {
		t.Fatalf("no warning naming the damaged file in the log: %q", line)
	}
	if got := counterValue(t, n, "restarea_corruption_detected_total", "search index"); got != 1 {
		t.Fatalf("restarea_corruption_detected_total{file=\"search index\"} = %v, want 1", got)
	}
}

// counterValue is the value of the counter name{file=file} of n.
func counterValue(t *testing.T, n *node.Node, name, file string) float64 {
	t.Helper()
	mfs, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "file" && l.GetValue() == file {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{file=%q}", name, file)
	return 0
}

// A leader whose snapshot's state.bin rotted while it ran never sends it:
// when a joining node needs the snapshot, raft's CRC-64 finds the damage
// before a byte leaves, and the leader stops, naming the file.
func TestDamagedSnapshotIsNeverSent(t *testing.T) {
	first := testnode.Start(t, testnode.WithConfig(func(c *server.Config) {
		c.ClusterSecret = testnode.Secret
		c.TrailingLogs = 1 // the log after a snapshot cannot bring a new node up
	}))
	ctx := context.Background()
	meta := restarea.PostMeta{Source: "192.0.2.1", Channel: restarea.ChannelHTTP}
	for i := 0; i < 5; i++ {
		if _, err := first.Post(ctx, testkit.Question("Is a snapshot checked before it is sent?"), meta); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.TakeSnapshot(); err != nil {
		t.Fatal(err)
	}
	states, _ := filepath.Glob(filepath.Join(first.DataDir(), "snapshots", "*", "state.bin"))
	if len(states) != 1 {
		t.Fatalf("snapshots: %v, want one", states)
	}
	testkit.RotMiddle(t, states[0])
	joiner, err := server.Start(testnode.Config(t, testnode.WithConfig(func(c *server.Config) {
		c.ClusterSecret, c.JoinURLs = testnode.Secret, []string{first.URL()}
		c.LeaderWait, c.ApplyTimeout = 3*time.Second, 5*time.Second
	})))
	if err == nil {
		t.Cleanup(func() { joiner.Close() })
	}
	select {
	case <-first.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the leader did not stop on its damaged snapshot")
	}
	id := filepath.Base(filepath.Dir(states[0]))
	var ce *fsm.CorruptError
	if !errors.As(first.Halted(), &ce) || ce.File != "snapshots/"+id+"/state.bin" || ce.Want == ce.Got {
		t.Fatalf("the leader stopped with %v, want a CorruptError naming %s", first.Halted(), id)
	}
	if got := counterValue(t, first, "restarea_corruption_detected_total", "snapshot"); got != 1 {
		t.Fatalf("restarea_corruption_detected_total{file=\"snapshot\"} = %v, want 1", got)
	}
}
