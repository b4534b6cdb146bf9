package testnode

import (
	"context"
	"fmt"
	"time"

	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/node"
)

// StartMain starts a single-node cluster with its data under dir, as
// Start does, for code that has no testing.TB: a TestMain, or a package's
// runnable examples. It waits (up to 20s) until the node is ready and has
// applied the configured limits, and returns it; the caller closes it and
// removes dir. On an error nothing is left running.
func StartMain(dir string, opts ...Option) (*node.Node, error) {
	cfg := configIn(dir, opts...)
	n, err := server.Start(cfg)
	if err != nil {
		return nil, fmt.Errorf("start node: %w", err)
	}
	err = testkit.Poll(context.Background(), 20*time.Second, func() error {
		if err := n.Ready(); err != nil {
			return err
		}
		s, err := n.Settings(context.Background())
		if err == nil && (s.PerSourceLimit != cfg.RatePerSource || s.GlobalLimit != cfg.RateGlobal) {
			err = fmt.Errorf("settings %+v", s)
		}
		return err
	})
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("node %s not ready: %w", n.ID(), err)
	}
	return n, nil
}
