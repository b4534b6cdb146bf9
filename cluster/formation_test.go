package cluster_test

import (
	"testing"
	"time"

	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// A StatefulSet scaled from 3 to 5 gives every pod the same flags: --join
// names the first three pods and --bootstrap-expect is 3. A fourth node
// that is not in the join list must never bootstrap, even when it starts
// before the three and sees two of them (it would count itself as the
// third): it waits for the cluster they form and joins it as a voter, and
// so does a fifth node started once the cluster is running.
func TestBootstrapExpectNodeOutsideJoinListJoins(t *testing.T) {
	expect := newExpectNodes(t, 5)
	start := func(i int) *node.Node {
		t.Helper()
		n, err := expect.start(t, i)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	fourth := start(3)
	a, b := start(0), start(1)
	// Two of the three are up: the fourth sees expect nodes counting
	// itself, and must still not bootstrap; nor may the two.
	time.Sleep(1500 * time.Millisecond)
	for _, n := range []*node.Node{fourth, a, b} {
		if n.Peer().HasState {
			t.Fatalf("node %s formed a cluster before the third join peer was up", n.ID())
		}
	}
	c := start(2)
	nodes := []*node.Node{a, b, c, fourth}
	testnode.WaitMembers(t, nodes, 4)

	fifth := start(4)
	nodes = append(nodes, fifth)
	testnode.WaitMembers(t, nodes, 5)
	for _, n := range nodes {
		// A member of the configuration may still be catching up (or a
		// leader elected meanwhile applying its predecessor's log).
		testnode.WaitReady(t, n)
	}
	st, err := fifth.ClusterStatus(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Members {
		if m.Suffrage != "voter" {
			t.Fatalf("member %s is %s, want voter", m.ID, m.Suffrage)
		}
	}
	res := testnode.Post(t, fourth, testkit.Question("five after scaling"))
	testnode.WaitThread(t, nodes, res.Entry.ID)
}
