package node_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// commandsIn returns the command entries of the raft log in dir (the node
// stopped), in index order.
func commandsIn(t *testing.T, dir string) []raft.Log {
	t.Helper()
	logs, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db"),
		BoltOptions: &bbolt.Options{ReadOnly: true, Timeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	first, _ := logs.FirstIndex()
	last, _ := logs.LastIndex()
	var out []raft.Log
	for i := first; i <= last && i > 0; i++ {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
		if l.Type == raft.LogCommand {
			out = append(out, l)
		}
	}
	return out
}

// entryWith returns the command entry whose bytes contain b.
func entryWith(t *testing.T, logs []raft.Log, b []byte) raft.Log {
	t.Helper()
	for _, l := range logs {
		if bytes.Contains(l.Data, b) {
			return l
		}
	}
	t.Fatalf("no entry of the log holds %q", b)
	return raft.Log{}
}

// Before cluster version 3 the leader writes commands the previous release
// reads (no checksum): a node can still be downgraded. From version 3 on
// every command carries its checksum. A byte of a question's body flipped
// in raft.db then stops the node that reads it — with the state file
// rebuilt from the log, the damaged command is met at start and when
// applied — with a *fsm.CorruptError naming raft.db and the entry's index,
// an ERROR line and restarea_corruption_detected_total{file="raft.db"};
// nothing of the damaged command reaches the state. restarea recover
// refuses the damaged log and changes nothing.
func TestDamagedLogEntryStopsTheNode(t *testing.T) {
	dir := t.TempDir()
	n := testnode.Start(t, testnode.WithDataDir(dir), testnode.FormedByV010())
	ctx := context.Background()
	before := testnode.Post(t, n, testkit.Question("written before the upgrade is finalized"))
	if res, err := n.FinalizeUpgrade(ctx); err != nil || res.To != fsm.ClusterVersionMax {
		t.Fatalf("finalize: %+v, %v", res, err)
	}
	body := "a canary body " + strings.ReplaceAll(uuid.NewString(), "-", "") + " that rots on the disk"
	q := testkit.Question("the damaged question")
	q.Body = body
	damagedPost := testnode.Post(t, n, q)
	testnode.Post(t, n, testkit.Question("written after it"))
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	<-n.Done()

	logs := commandsIn(t, dir)
	old := entryWith(t, logs, []byte(before.Entry.Title))
	if old.Data[0] == 3 {
		t.Fatalf("before cluster version 3 the leader wrote the checksummed format %x", old.Data[:8])
	}
	if _, err := fsm.DecodeCommand(old.Data); err != nil {
		t.Fatal(err)
	}
	target := entryWith(t, logs, []byte(body))
	if target.Data[0] != 3 || fsm.VerifyCommand(target.Data) != nil {
		t.Fatalf("at cluster version 3 the leader wrote %x, want the checksummed format", target.Data[:8])
	}

	damaged := testkit.Rot(t, filepath.Join(dir, "raft.db"), []byte(body), len(body)/2)

	hashes := dirHashes(t, dir)
	_, err := node.Recover(dir, node.RecoverOptions{})
	var ce *fsm.CorruptError
	if !errors.As(err, &ce) || ce.File != "raft.db" || ce.Index != target.Index ||
		!strings.Contains(err.Error(), fmt.Sprintf("raft.db (command) at log index %d", target.Index)) {
		t.Fatalf("recover of a damaged log: %v, want refused naming raft.db at index %d", err, target.Index)
	}
	for path, h := range dirHashes(t, dir) {
		if hashes[path] != h {
			t.Errorf("the refused recover changed %s", path)
		}
	}
	// The state file is rebuilt from the log, so the damaged command is
	// applied again, not only read.
	if err := os.Remove(filepath.Join(dir, "state.db")); err != nil {
		t.Fatal(err)
	}

	var out testkit.SyncBuffer
	m, err := server.Start(testnode.Config(t, testnode.WithDataDir(dir),
		testnode.WithConfig(func(c *server.Config) { c.Logger = slog.New(slog.NewJSONHandler(&out, nil)) })))
	if err != nil {
		t.Fatalf("start on the damaged log: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	select {
	case <-m.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the node with a damaged log entry did not stop")
	}
	ce = nil
	if err := m.Halted(); !errors.As(err, &ce) || ce.File != "raft.db" || ce.Index != target.Index || ce.Want == ce.Got {
		t.Fatalf("Halted() = %v, want a *fsm.CorruptError for raft.db at index %d", err, target.Index)
	}
	if !strings.Contains(out.String(), `"level":"ERROR","msg":"stopping: this node's data is damaged"`) ||
		!strings.Contains(out.String(), fmt.Sprintf("at log index %d", target.Index)) {
		t.Fatalf("no ERROR line naming the damage:\n%s", out.String())
	}
	if v := counter(t, m, "restarea_corruption_detected_total", map[string]string{"file": "raft.db"}); v != 1 {
		t.Fatalf("restarea_corruption_detected_total{file=\"raft.db\"} = %v, want 1", v)
	}
	state, err := os.ReadFile(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(state, damaged) || bytes.Contains(state, []byte(damagedPost.Entry.ID)) {
		t.Fatal("the state file holds the damaged command")
	}
}

// A leader whose copy of a command rotted never sends it: a follower that
// lacks the entry makes the leader read it from raft.db, and the leader
// stops with a *fsm.CorruptError instead of replicating it (the only other
// holder of the entry is down meanwhile, so nothing else can send it).
// The follower gets the entry from the next leader, sound; after the runbook (remove
// the damaged node, wipe it, join it again) every node holds the same
// entries.
func TestLeaderNeverSendsADamagedEntry(t *testing.T) {
	nodes := testnode.StartCluster(t, 3)
	ctx := context.Background()
	a := testnode.Leader(t, nodes)
	if res, err := a.FinalizeUpgrade(ctx); err != nil || res.To != fsm.ClusterVersionMax {
		t.Fatalf("finalize: %+v, %v", res, err)
	}
	var b, c *node.Node
	for _, n := range nodes {
		switch {
		case n == a:
		case b == nil:
			b = n
		default:
			c = n
		}
	}
	restart := func(dir, raftAddr string, opts ...testnode.Option) *node.Node {
		t.Helper()
		opts = append([]testnode.Option{withSecret, testnode.WithDataDir(dir),
			testnode.WithConfig(func(cfg *server.Config) { cfg.RaftAddr = raftAddr })}, opts...)
		n, err := server.Start(testnode.Config(t, opts...))
		if err != nil {
			t.Fatalf("restart: %v", err)
		}
		t.Cleanup(func() { n.Close() })
		return n
	}

	// c misses the entry: it is down while a and b commit it.
	cDir, cRaft := c.DataDir(), c.RaftAddr()
	c.Close()
	<-c.Done()
	body := "a canary body " + strings.ReplaceAll(uuid.NewString(), "-", "") + " that rots on the leader"
	q := testkit.Question("the damaged question")
	q.Body = body
	x := testnode.Post(t, a, q)
	// Entries after it fill the pages after the entry's: raft.db appends
	// only to its last page, so the one holding the entry is never copied
	// again while the test changes it.
	ids := []string{x.Entry.ID}
	for i := range 24 {
		p := testkit.Question(fmt.Sprintf("padding %d", i))
		p.Body = strings.Repeat("padding to fill a page of raft.db. ", 30)
		ids = append(ids, testnode.Post(t, a, p).Entry.ID)
	}
	// A restart empties a's log cache: from now on it reads the entry
	// from raft.db to send it.
	aDir, aRaft, aID := a.DataDir(), a.RaftAddr(), a.ID()
	a.Close()
	<-a.Done()
	var out, raftOut testkit.SyncBuffer
	a = restart(aDir, aRaft, testnode.WithConfig(func(cfg *server.Config) {
		cfg.Logger, cfg.RaftLogOutput = slog.New(slog.NewJSONHandler(&out, nil)), &raftOut
	}))
	testkit.Eventually(t, 20*time.Second, "a to be ready", a.Ready)
	// Raft on a reads its whole log again as it starts: the entry is
	// damaged only once that is done, so that what meets it is a's send.
	last, err := a.LastLogIndex()
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "raft on a to read its log again", func() error {
		if got := a.RaftAppliedIndex(); got < last {
			return fmt.Errorf("applied %d of %d", got, last)
		}
		return nil
	})
	damaged := testkit.Rot(t, filepath.Join(aDir, "raft.db"), []byte(body), len(body)/2)
	// With b down, a is the only node that holds the entry: c can only
	// get it from a, which leads with c's vote (c's log is behind).
	bDir, bRaft := b.DataDir(), b.RaftAddr()
	b.Close()
	<-b.Done()
	c = restart(cDir, cRaft)
	select {
	case <-a.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("the leader with a damaged entry did not stop:\n%s", out.String())
	}
	var ce *fsm.CorruptError
	if err := a.Halted(); !errors.As(err, &ce) || ce.File != "raft.db" || ce.Index == 0 {
		t.Fatalf("Halted() = %v, want a *fsm.CorruptError for raft.db", err)
	}
	if !strings.Contains(out.String(), "stopping: this node's data is damaged") {
		t.Fatalf("no ERROR line:\n%s", out.String())
	}
	if !strings.Contains(raftOut.String(), "failed to appendEntries to") || !strings.Contains(raftOut.String(), "checksum mismatch") {
		t.Fatalf("a did not refuse to send the damaged entry:\n%s", raftOut.String())
	}
	b = restart(bDir, bRaft)

	// b leads now and sends c the sound entry.
	for _, n := range []*node.Node{b, c} {
		waitEntries(t, n, ids)
		if n.Halted() != nil {
			t.Fatalf("%s stopped: %v", n.ID(), n.Halted())
		}
	}
	got, err := c.GetThread(ctx, x.Entry.ID, restarea.ReadOptions{})
	if err != nil || got.Body != body {
		t.Fatalf("c holds %+v, %v; want the sound entry", got, err)
	}
	if raw, err := os.ReadFile(filepath.Join(cDir, "raft.db")); err != nil || bytes.Contains(raw, damaged) {
		t.Fatalf("c's raft.db holds the damaged bytes (%v)", err)
	}

	// The runbook: remove the damaged node, wipe it, join it again.
	if err := b.RemoveMember(ctx, aID); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(aDir); err != nil {
		t.Fatal(err)
	}
	fresh := restart(t.TempDir(), "127.0.0.1:0", testnode.WithConfig(func(cfg *server.Config) { cfg.JoinURLs = []string{b.URL()} }))
	more := testnode.Post(t, fresh, testkit.Question("after the runbook"))
	ids = append(ids, more.Entry.ID)
	all := []*node.Node{b, c, fresh}
	testnode.WaitMembers(t, all, 3)
	for _, n := range all {
		waitEntries(t, n, ids)
	}
}
