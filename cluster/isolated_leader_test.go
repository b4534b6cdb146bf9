package cluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
	"github.com/restarea/restarea/transport"
)

// A follower forwarding to a leader that is cut off mid-request does not
// hang: it answers within its bounds (a 201 once a new leader took the
// resent command, or 503 unavailable), and the retried post is stored once.
func TestForwardToIsolatedLeaderIsBounded(t *testing.T) {
	faults := map[string]*transport.Faults{}
	var mu sync.Mutex
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(func(c *server.Config) {
		fastFailover(c)
		f := &transport.Faults{}
		mu.Lock()
		faults[c.DataDir] = f
		mu.Unlock()
		c.Faults = f
	}))
	leader := testnode.Leader(t, nodes)
	var follower *node.Node
	for _, n := range nodes {
		if n != leader {
			follower = n
		}
	}
	faults[leader.DataDir()].Isolate()
	req := testkit.Question("while the leader is cut off")
	start := time.Now()
	res, err := follower.Post(context.Background(), req, meta)
	took := time.Since(start)
	if err != nil && restarea.ErrorCode(err) != restarea.CodeUnavailable {
		t.Fatalf("post through a follower: %v", err)
	}
	if took > 12*time.Second {
		t.Fatalf("post took %v with the leader cut off", took)
	}
	t.Logf("first answer after %v: %v", took.Round(time.Millisecond), err)
	again := testnode.Post(t, follower, req)
	if err == nil && (again.Entry.ID != res.Entry.ID || !again.Replayed) {
		t.Fatalf("retry: %+v, first %+v", again, res)
	}
	faults[leader.DataDir()].Heal()
	testnode.WaitThread(t, nodes, again.Entry.ID)
	page, _ := follower.ListThreads(context.Background(), restarea.ListOptions{})
	if len(page.Threads) != 1 {
		t.Fatalf("%d threads stored, want 1", len(page.Threads))
	}
}
