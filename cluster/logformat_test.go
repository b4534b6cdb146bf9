package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/cluster"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// TestClusterSwitchesToLogFormat2: once every member says it reads log
// format 2, the leader switches the cluster to it; writes keep working on
// every node; and a node that reads only format 1 can no longer join.
func TestClusterSwitchesToLogFormat2(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(fastFailover))
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range nodes {
		for {
			st, err := n.ClusterStatus(ctx)
			if err == nil && st.LogFormat >= 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s still on log format %d", n.ID(), st.LogFormat)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i, n := range nodes {
		res := postRetry(t, n, question(fmt.Sprintf("format 2 through node %d", i)))
		waitHas(t, nodes, res.Entry.ID)
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
