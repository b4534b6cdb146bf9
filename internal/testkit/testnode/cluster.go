package testnode

import (
	"context"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/node"
)

// Secret is the cluster secret test clusters share.
var Secret = []byte("test-cluster-secret-0123456789")

// StartCluster starts size real nodes: the first bootstraps, the others
// join it through its URL. It waits until every node is a voter and
// ready, and closes them all when the test ends.
func StartCluster(t testing.TB, size int, opts ...Option) []*node.Node {
	t.Helper()
	opts = append([]Option{WithConfig(func(c *server.Config) { c.ClusterSecret = Secret })}, opts...)
	first := Start(t, opts...)
	nodes := []*node.Node{first}
	for i := 1; i < size; i++ {
		o := append(append([]Option{}, opts...), WithConfig(func(c *server.Config) { c.JoinURLs = []string{first.URL()} }))
		n, err := server.Start(Config(t, o...))
		if err != nil {
			t.Fatalf("start node %d: %v", i, err)
		}
		t.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
	}
	WaitMembers(t, nodes, size)
	return nodes
}

// WaitMembers waits (up to 20s) until every node sees want members and is
// ready.
func WaitMembers(t testing.TB, nodes []*node.Node, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range nodes {
		for {
			st, err := n.ClusterStatus(context.Background())
			if err == nil && len(st.Members) == want && n.Ready() == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s: members %d (want %d), ready: %v", n.ID(), len(st.Members), want, n.Ready())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Leader returns the node that is leader, waiting up to 10s for one.
func Leader(t testing.TB, nodes []*node.Node) *node.Node {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range nodes {
			if n.IsLeader() {
				return n
			}
		}
		time.Sleep(time.Millisecond) // cheap, and tests of a failover look at its first moments
	}
	t.Fatalf("no leader among %d nodes", len(nodes))
	return nil
}
