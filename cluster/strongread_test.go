package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/node"
	"github.com/restarea/restarea/node/nodetest"
)

// A strong read answered by a leader elected a moment ago sees a write the
// previous leader acknowledged just before it died. Until the new leader
// commits an entry of its own term, raft's commit index on it can still
// be the one it knew as a follower, which may not include that write; a
// read index taken from it then would miss an acknowledged post.
func TestStrongReadRightAfterFailoverSeesAcknowledgedWrite(t *testing.T) {
	for round := range 3 {
		nodes := nodetest.StartCluster(t, 3, nodetest.WithConfig(fastFailover))
		leader := nodetest.Leader(t, nodes)
		var survivors []*node.Node
		for _, n := range nodes {
			if n != leader {
				survivors = append(survivors, n)
			}
		}
		res := postRetry(t, leader, question("acknowledged just before the leader died"))
		leader.Kill()

		var newLeader *node.Node
		deadline := time.Now().Add(10 * time.Second)
		for newLeader == nil {
			for _, n := range survivors {
				if n.IsLeader() {
					newLeader = n
				}
			}
			if time.Now().After(deadline) {
				t.Fatal("no new leader within 10s")
			}
			time.Sleep(time.Millisecond)
		}
		// The new leader first, then the follower, whose read index comes
		// from the new leader.
		order := []*node.Node{newLeader}
		for _, n := range survivors {
			if n != newLeader {
				order = append(order, n)
			}
		}
		for _, n := range order {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			var err error
			for {
				_, err = n.GetThread(ctx, res.Entry.ID, restarea.ReadOptions{Consistency: restarea.ConsistencyStrong})
				if restarea.ErrorCode(err) != restarea.CodeUnavailable || ctx.Err() != nil {
					break
				}
				time.Sleep(20 * time.Millisecond) // no leader yet, or leadership not yet confirmed: retry
			}
			cancel()
			if err != nil {
				t.Fatalf("round %d: strong read on %s (leader %v) of the acknowledged %s: %v",
					round, n.ID(), n.IsLeader(), res.Entry.ID, err)
			}
		}
	}
}
