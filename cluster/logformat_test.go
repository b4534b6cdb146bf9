package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/cluster"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// TestClusterSwitchesToLogFormat2: once every member says it reads log
// format 2, the leader switches the cluster to it; writes keep working on
// every node; and a node that reads only format 1 can no longer join.
func TestClusterSwitchesToLogFormat2(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(fastFailover))
	ctx := context.Background()
	for _, n := range nodes {
		testkit.Eventually(t, 30*time.Second, "node "+n.ID()+" on log format 2", func() error {
			st, err := n.ClusterStatus(ctx)
			if err == nil && st.LogFormat < 2 {
				err = fmt.Errorf("log format %d", st.LogFormat)
			}
			return err
		})
	}
	for i, n := range nodes {
		res := testnode.Post(t, n, testkit.Question(fmt.Sprintf("format 2 through node %d", i)))
		testnode.WaitThread(t, nodes, res.Entry.ID)
	}

	leader := testnode.Leader(t, nodes)
	err := leader.JoinLeader(ctx, cluster.JoinRequest{ID: "old-node", RaftAddr: "127.0.0.1:1"})
	if restarea.ErrorCode(err) != restarea.CodeConflict {
		t.Fatalf("join of a format-1 node: %v, want conflict", err)
	}
	st, _ := leader.ClusterStatus(ctx)
	if len(st.Members) != 3 {
		t.Fatalf("members after the refused join: %+v", st.Members)
	}
}
