package web_test

import (
	"strings"
	"testing"

	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// TestBehindNoteOnCluster: in a running cluster the home and thread pages
// of a follower say they may be behind, and the leader's do not.
func TestBehindNoteOnCluster(t *testing.T) {
	nodes := testnode.StartCluster(t, 2)
	leader := testnode.Leader(t, nodes)
	q := testnode.Post(t, leader, testkit.Question("behind?"))
	testnode.WaitThread(t, nodes, q.Entry.ID)
	const note = `class="behind"`
	for _, n := range nodes {
		for _, p := range []string{"/", "/threads/" + q.Entry.ID} {
			before := n.IsLeader()
			r, body := getPage(t, n.URL()+p)
			if after := n.IsLeader(); before != after {
				t.Skipf("leadership moved during the request to %s", p)
			}
			if r.Status != 200 || strings.Contains(body, note) == before {
				t.Errorf("%s on a node leading %v: status %d, note shown %v", p, before, r.Status, !before)
			}
		}
	}
}
