package node_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// A majority lost for good: two of three nodes (three of five) are gone
// with their data. The survivor is recovered as the single voter of a new
// configuration, wiped nodes join it back to full size, and every post the
// survivor held is on every node, once.
func TestRecoverFromALostMajority(t *testing.T) {
	for _, size := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d nodes", size), func(t *testing.T) { recoverFromALostMajority(t, size) })
	}
}

func recoverFromALostMajority(t *testing.T, size int) {
	nodes := testnode.StartCluster(t, size)
	var ids []string
	for i := range 30 {
		res := testnode.Post(t, nodes[i%size], testkit.Question(fmt.Sprintf("before the fire %d", i)))
		ids = append(ids, res.Entry.ID)
	}
	survivor := nodes[1]
	dir := survivor.DataDir()
	// The survivor holds every acknowledged post here; a real survivor
	// may lack the last ones (docs/disasters.md says what is lost).
	waitEntries(t, survivor, ids)

	if _, err := node.Inspect(dir); err == nil || !strings.Contains(err.Error(), "is restarea running") {
		t.Fatalf("inspect of a running node's data: %v, want it refused as running", err)
	}
	for _, n := range nodes {
		n.Close()
	}
	in, err := node.Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if in.NodeID != survivor.ID() || len(in.Servers) != size || in.Last == 0 || in.StateApplied == 0 || in.StateApplied > in.Last {
		t.Fatalf("inspection %+v", in)
	}
	// Every node but the survivor is wiped: with three, the two lost; with
	// five, the three lost and the other survivor, which joins again as a
	// new member (only one survivor is recovered).
	for _, n := range nodes {
		if n != survivor {
			if err := os.RemoveAll(n.DataDir()); err != nil {
				t.Fatal(err)
			}
		}
	}

	addr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	rec, err := node.Recover(dir, node.RecoverOptions{RaftAdvertise: addr})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Voter.ID != survivor.ID() || rec.Voter.Address != addr || rec.Index != in.Last || rec.Entries != uint64(len(ids)) {
		t.Fatalf("recovery %+v, want %d entries up to %d", rec, len(ids), in.Last)
	}
	if _, err := node.Recover(dir, node.RecoverOptions{}); err != nil {
		t.Fatalf("recovering again (idempotent, its own address kept): %v", err)
	}

	recovered := startRecovered(t, dir, addr, size)
	after := testnode.Post(t, recovered[size-1], testkit.Question("after the fire"))
	ids = append(ids, after.Entry.ID)
	for _, n := range recovered {
		waitEntries(t, n, ids)
	}
}

// withSecret is the cluster secret of testnode.StartCluster's clusters.
var withSecret = testnode.WithConfig(func(c *server.Config) { c.ClusterSecret = testnode.Secret })

// startRecovered starts the recovered node on dir at raftAddr, then
// size-1 new nodes that join it, and waits until all are members; the
// recovered node is first.
func startRecovered(t *testing.T, dir, raftAddr string, size int) []*node.Node {
	t.Helper()
	first := testnode.StartConfig(t, testnode.Config(t, withSecret, testnode.WithDataDir(dir),
		testnode.WithConfig(func(c *server.Config) { c.RaftAddr = raftAddr })))
	recovered := []*node.Node{first}
	for range size - 1 {
		n, err := server.Start(testnode.Config(t, withSecret, testnode.WithConfig(func(c *server.Config) { c.JoinURLs = []string{first.URL()} })))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		recovered = append(recovered, n)
	}
	testnode.WaitMembers(t, recovered, size)
	return recovered
}

// waitEntries waits until n holds exactly the entries ids, each once.
func waitEntries(t *testing.T, n *node.Node, ids []string) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, "node "+n.ID()+" to hold every entry once", func() error {
		page, err := n.ListEntries(context.Background(), restarea.ListOptions{Limit: restarea.MaxPageLimit})
		if err != nil {
			return err
		}
		seen := map[string]int{}
		for _, e := range page.Entries {
			seen[e.ID]++
		}
		for _, id := range ids {
			if seen[id] != 1 {
				return fmt.Errorf("entry %s held %d times", id, seen[id])
			}
		}
		if len(page.Entries) != len(ids) {
			return fmt.Errorf("%d entries, want %d", len(page.Entries), len(ids))
		}
		return nil
	})
}
