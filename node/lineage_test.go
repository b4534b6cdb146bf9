package node_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// A machine of a majority lost for good comes back with its data after
// the survivor was recovered and a new node joined: the survivor refuses
// it, it stops by itself saying to wipe it, it refuses to start again on
// that data, and the recovered cluster takes writes throughout. Without
// the fence, the old configuration it holds (the survivor and two others)
// would let it vote, and with another lost machine lead.
func TestStaleMachineIsFenced(t *testing.T) {
	nodes := testnode.StartCluster(t, 3)
	var ids []string
	for i := range 10 {
		ids = append(ids, testnode.Post(t, nodes[i%3], testkit.Question("before the fire "+string(rune('a'+i)))).Entry.ID)
	}
	survivor, lost := nodes[0], nodes[2]
	waitEntries(t, survivor, ids)
	waitEntries(t, lost, ids)
	survivorAddr, lostAddr, lostID := survivor.RaftAddr(), lost.RaftAddr(), lost.ID()
	for _, n := range nodes {
		n.Close()
	}
	// The lost machine's disk, as it will come back.
	staleDir := filepath.Join(t.TempDir(), "stale")
	if err := os.CopyFS(staleDir, os.DirFS(lost.DataDir())); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes[1:] {
		os.RemoveAll(n.DataDir())
	}

	before, err := node.Inspect(survivor.DataDir())
	if err != nil || before.Lineage != "0" {
		t.Fatalf("inspection before recovery: lineage %q, %v", before.Lineage, err)
	}
	rec, err := node.Recover(survivor.DataDir(), node.RecoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Lineage == "0" || rec.Parent != "0" {
		t.Fatalf("recovery lineage %q parent %q", rec.Lineage, rec.Parent)
	}
	again, err := node.Recover(survivor.DataDir(), node.RecoverOptions{})
	if err != nil || again.Lineage != rec.Lineage {
		t.Fatalf("recovering again drew lineage %q (first %q), %v; want it kept", again.Lineage, rec.Lineage, err)
	}

	recovered := startRecovered(t, survivor.DataDir(), survivorAddr, 2)
	first, joined := recovered[0], recovered[1]
	if in := joined.Lineage(); in != rec.Lineage {
		t.Fatalf("the joined node shows lineage %q; want the recovered %q", in, rec.Lineage)
	}

	stale, err := server.Start(testnode.Config(t, withSecret, testnode.WithDataDir(staleDir), testnode.WithConfig(func(c *server.Config) {
		c.RaftAddr, c.NodeID = lostAddr, lostID
	})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stale.Close() })
	select {
	case <-stale.Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("the stale machine did not stop")
	}
	if err := stale.Halted(); !errors.Is(err, node.ErrStale) || !strings.Contains(err.Error(), "delete its data directory") {
		t.Fatalf("the stale machine stopped with %v; want ErrStale saying to wipe it", err)
	}
	if _, err := server.Start(testnode.Config(t, withSecret, testnode.WithDataDir(staleDir), testnode.WithConfig(func(c *server.Config) {
		c.RaftAddr, c.NodeID = lostAddr, lostID
	}))); !errors.Is(err, node.ErrStale) {
		t.Fatalf("a restart on the stale data: %v; want ErrStale", err)
	}

	after := testnode.Post(t, joined, testkit.Question("after the fire"))
	ids = append(ids, after.Entry.ID)
	for _, n := range []*node.Node{first, joined} {
		waitEntries(t, n, ids)
	}
}
