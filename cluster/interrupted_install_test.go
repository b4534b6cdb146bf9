package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// A follower that dies while it installs a snapshot from the leader keeps
// the snapshot (raft stores it before the state machine restores it) but
// not the restored state file. Raft resumes applying after the snapshot's
// index either way, so on restart the node must restore that snapshot
// rather than trust its older state file, or it would silently miss every
// entry in between.
func TestRestartAfterInterruptedSnapshotInstallMissesNothing(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(snapshotOften))
	leader := testnode.Leader(t, nodes)
	lagger := others(nodes, leader)[0]
	dir := lagger.DataDir()
	state := filepath.Join(dir, "state.db")
	lag, err := lagger.ClusterStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lagger.Close()
	before, err := os.ReadFile(state) // the state file as it was before the install
	if err != nil {
		t.Fatal(err)
	}
	const n = 60
	for i := range n {
		testnode.Post(t, leader, testkit.Question(fmt.Sprintf("while away %d", i)))
	}
	// The leader snapshots and compacts past the lagger.
	testkit.Eventually(t, 30*time.Second, "a leader's snapshot past the lagger", func() error {
		if idx := snapshotIndex(t, leader.DataDir()); idx <= lag.AppliedIndex+5 {
			return fmt.Errorf("latest snapshot at %d, the lagger applied %d", idx, lag.AppliedIndex)
		}
		return nil
	})

	r := rejoin(t, dir, leader, snapshotOften)
	waitThreads(t, r, n)
	if snaps, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "meta.json")); len(snaps) == 0 {
		t.Fatal("the lagging node caught up without a snapshot install; the test needs one")
	}
	r.Kill()
	// The install "did not finish": the snapshot is kept, the state file is
	// the one from before it.
	if err := os.WriteFile(state, before, 0o600); err != nil {
		t.Fatal(err)
	}
	last := testnode.Post(t, leader, testkit.Question("after the interrupted install"))
	r = rejoin(t, dir, leader, snapshotOften)
	testnode.WaitThread(t, []*node.Node{r}, last.Entry.ID)
	waitThreads(t, r, n+1)
}

// waitThreads waits until n holds want public questions in its own state.
func waitThreads(t *testing.T, n *node.Node, want int) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, fmt.Sprintf("%s to hold %d questions", n.ID(), want), func() error {
		page, err := n.ListThreads(context.Background(), restarea.ListOptions{Limit: 200})
		if err == nil && len(page.Threads) != want {
			err = fmt.Errorf("%d questions", len(page.Threads))
		}
		return err
	})
}
