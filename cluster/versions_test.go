package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
	"github.com/restarea/restarea/transport"
)

// startJoiner starts a node that joins first, announcing versions, and
// closes it when the test ends; it does not wait for the join.
func startJoiner(t *testing.T, first *node.Node, versions transport.VersionRange) *node.Node {
	t.Helper()
	cfg := testnode.Config(t, testnode.WithConfig(func(c *server.Config) {
		c.ClusterSecret = testnode.Secret
		c.JoinURLs = []string{first.URL()}
		c.ProtocolVersions = versions
	}))
	n, err := server.Start(cfg)
	if err != nil {
		t.Fatalf("start joiner: %v", err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// A node one release ahead (versions 2-3, as --test-protocol-versions
// announces it) joins a node of this release and they speak version 2;
// a node two releases ahead (3-4) is refused on both sides, counted as a
// version refusal, and never becomes a member.
func TestJoinAcrossReleases(t *testing.T) {
	first := testnode.StartCluster(t, 1)[0]
	versionRefusals := func(n *node.Node) float64 {
		return metric(t, n, "restarea_cluster_conn_refused_total", map[string]string{"reason": "version"})
	}

	far := startJoiner(t, first, transport.VersionRange{Min: 3, Max: 4})
	testkit.Eventually(t, 30*time.Second, "both ends to refuse the 3-4 node for its version", func() error {
		if a, b := versionRefusals(first), versionRefusals(far); a == 0 || b == 0 {
			return fmt.Errorf("version refusals: member %v, joiner %v", a, b)
		}
		return nil
	})
	if st, err := first.ClusterStatus(context.Background()); err != nil || len(st.Members) != 1 {
		t.Fatalf("members after the refused join: %+v, %v", st.Members, err)
	}
	far.Close()

	next := startJoiner(t, first, transport.VersionRange{Min: 2, Max: 3})
	testnode.WaitMembers(t, []*node.Node{first, next}, 2)
	if v := metric(t, first, "restarea_cluster_conn_established_total", map[string]string{"direction": "out", "protocol": "2"}); v == 0 {
		t.Fatal("the member did not dial the 2-3 node in version 2")
	}
	if v := metric(t, first, "restarea_cluster_conn_established_total", map[string]string{"protocol": "1"}); v != 0 {
		t.Fatalf("%v connections in version 1 between nodes that speak 2", v)
	}
}
