package testnode

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
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

// WaitMembers waits (up to 30s) until every node sees want members and
// is ready.
func WaitMembers(t testing.TB, nodes []*node.Node, want int) {
	t.Helper()
	for _, n := range nodes {
		testkit.Eventually(t, 30*time.Second, fmt.Sprintf("node %s to see %d members and be ready", n.ID(), want), func() error {
			st, err := n.ClusterStatus(context.Background())
			switch {
			case err != nil:
				return err
			case len(st.Members) != want:
				return fmt.Errorf("%d members", len(st.Members))
			}
			return n.Ready()
		})
	}
}

// Leader returns the node that is leader, waiting up to 20s for one.
func Leader(t testing.TB, nodes []*node.Node) *node.Node {
	t.Helper()
	return testkit.EventuallyValue(t, 20*time.Second, fmt.Sprintf("a leader among %d nodes", len(nodes)), func() (*node.Node, error) {
		for _, n := range nodes {
			if n.IsLeader() {
				return n, nil
			}
		}
		return nil, errors.New("no leader")
	})
}

// Meta is the PostMeta of Post: an HTTP post from a documentation address.
var Meta = restarea.PostMeta{Source: "203.0.113.9", Channel: restarea.ChannelHTTP}

// Post posts req through n like a careful client: an unavailable answer
// (no leader yet, an election) is retried with the same request for up to
// 30s; any other error fails the test.
func Post(t testing.TB, n *node.Node, req restarea.PostRequest) restarea.PostResult {
	t.Helper()
	return testkit.EventuallyValue(t, 30*time.Second, "post through "+n.ID(), func() (restarea.PostResult, error) {
		res, err := n.Post(context.Background(), req, Meta)
		if err != nil && restarea.ErrorCode(err) != restarea.CodeUnavailable {
			t.Fatalf("post through %s: %v", n.ID(), err)
		}
		return res, err
	})
}

// WaitThread waits (up to 30s) until every node reads the question id
// from its own state.
func WaitThread(t testing.TB, nodes []*node.Node, id string) {
	t.Helper()
	for _, n := range nodes {
		testkit.Eventually(t, 30*time.Second, fmt.Sprintf("node %s to read thread %s", n.ID(), id), func() error {
			_, err := n.GetThread(context.Background(), id, restarea.ReadOptions{})
			return err
		})
	}
}

// WaitLogFormat waits (up to 30s) until n reports log format want or a
// later one: a fresh cluster's leader switches formats moments after it
// forms (operator actions are audited from format 3).
func WaitLogFormat(t testing.TB, n *node.Node, want int) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, fmt.Sprintf("node %s on log format %d", n.ID(), want), func() error {
		st, err := n.ClusterStatus(context.Background())
		if err == nil && st.LogFormat < want {
			err = fmt.Errorf("log format %d", st.LogFormat)
		}
		return err
	})
}

// WaitClusterVersion waits until every node reports cluster version want.
func WaitClusterVersion(t testing.TB, want int, nodes ...*node.Node) {
	t.Helper()
	for _, n := range nodes {
		testkit.Eventually(t, 30*time.Second, fmt.Sprintf("%s at cluster version %d", n.ID(), want), func() error {
			st, err := n.ClusterStatus(context.Background())
			if err == nil && st.ClusterVersion != want {
				err = fmt.Errorf("cluster version %d", st.ClusterVersion)
			}
			return err
		})
	}
}
