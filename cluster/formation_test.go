package cluster_test

import (
	"sync"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/server"
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

// A new cluster forms at the newest cluster version every member knows:
// three nodes of this release formed by --bootstrap-expect run this
// release's newest from the start; with a member of a release that knows
// less, the cluster runs what that member knows (and an upgrade of it is
// finalized as usual); --initial-cluster-version caps it.
func TestNewClusterFormsAtNewestVersionAllKnow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		third testnode.Option
		all   testnode.Option
		want  int
	}{
		{"this release", nil, nil, fsm.ClusterVersionMax},
		{"a member that knows 2", playRelease("v0.2.0-test", 2), nil, 2},
		{"initial version 3", nil, testnode.WithConfig(func(c *server.Config) { c.InitialClusterVersion = 3 }), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expect := newExpectNodes(t, 3)
			nodes := make([]*node.Node, 3)
			var wg sync.WaitGroup
			for i := range 3 {
				var opts []testnode.Option
				if tc.all != nil {
					opts = append(opts, tc.all)
				}
				if i == 2 && tc.third != nil {
					opts = append(opts, tc.third)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					n, err := expect.start(t, i, opts...)
					if err != nil {
						t.Error(err)
						return
					}
					nodes[i] = n
				}()
			}
			wg.Wait()
			if t.Failed() {
				t.FailNow()
			}
			testnode.WaitMembers(t, nodes, 3)
			testnode.WaitClusterVersion(t, tc.want, nodes...)
			res := testnode.Post(t, nodes[2], testkit.Question("formed at "+tc.name))
			testnode.WaitThread(t, nodes, res.Entry.ID)
			// The raises are in the audit trail; nothing else raised them.
			page, err := nodes[0].ListAudit(t.Context(), restarea.ListOptions{Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			raises := 0
			for _, r := range page.Records {
				if r.Action == restarea.AuditClusterVersion {
					raises++
				}
			}
			if raises != tc.want-1 {
				t.Fatalf("%d cluster version records, want %d", raises, tc.want-1)
			}
		})
	}
}
