package node_test

import (
	"strings"
	"testing"

	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// A node whose raft port would reach beyond loopback with neither TLS nor
// a cluster secret refuses to start: anyone reaching it could drive raft.
func TestStartRefusesExposedRaftPortWithoutAuthentication(t *testing.T) {
	for _, bind := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.10:0"} {
		cfg := testnode.Config(t, testnode.WithConfig(func(c *server.Config) { c.RaftAddr = bind }))
		n, err := node.Start(cfg.Config)
		if err == nil {
			n.Close()
			t.Fatalf("a node with raft on %s and no secret or TLS started", bind)
		}
		if !strings.Contains(err.Error(), "loopback") || !strings.Contains(err.Error(), "cluster-secret") {
			t.Fatalf("raft on %s: %v; want it to say why and what to do", bind, err)
		}
	}
}
