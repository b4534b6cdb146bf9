package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// A strong read answered by a leader elected a moment ago sees a write the
// previous leader acknowledged just before it died. Until the new leader
// commits an entry of its own term, raft's commit index on it can still
// be the one it knew as a follower, which may not include that write; a
// read index taken from it then would miss an acknowledged post.
func TestStrongReadRightAfterFailoverSeesAcknowledgedWrite(t *testing.T) {
	for round := range 3 {
		nodes := testnode.StartCluster(t, 3, testnode.WithConfig(fastFailover))
		leader := testnode.Leader(t, nodes)
		survivors := others(nodes, leader)
		res := testnode.Post(t, leader, testkit.Question("acknowledged just before the leader died"))
		leader.Kill()
		newLeader := testnode.Leader(t, survivors)
		// The new leader first, then the follower, whose read index comes
		// from the new leader.
		order := append([]*node.Node{newLeader}, others(survivors, newLeader)...)
		for _, n := range order {
			var err error
			testkit.Poll(context.Background(), 30*time.Second, func() error {
				_, err = n.GetThread(context.Background(), res.Entry.ID, restarea.ReadOptions{Consistency: restarea.ConsistencyStrong})
				if restarea.ErrorCode(err) == restarea.CodeUnavailable {
					return err // no leader yet, or leadership not yet confirmed: retry
				}
				return nil
			})
			if err != nil {
				t.Fatalf("round %d: strong read on %s (leader %v) of the acknowledged %s: %v",
					round, n.ID(), n.IsLeader(), res.Entry.ID, err)
			}
		}
	}
}
