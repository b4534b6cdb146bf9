package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/restarea/restarea/internal/localcluster"
)

// Target is the cluster under test: node URLs, which one leads, and —
// when the bench started the nodes — their data directories and pids.
type Target struct {
	URLs     []string
	DataDirs []string // "" where unknown
	Pids     []int    // 0 where unknown
	// PprofAddrs are where the nodes serve Go's profiler ("" where they
	// do not: a remote cluster, or a run without a profile directory).
	PprofAddrs []string
	close      func() error
}

// Close stops what the bench started (nothing for a remote cluster).
func (t *Target) Close() error {
	if t.close == nil {
		return nil
	}
	return t.close()
}

// benchArgs are the `restarea serve` flags of nodes the bench starts:
// limits at their maximum with a one-second window (so the per-source
// record stays small), and loopback trusted as a proxy so that each load
// client is its own source.
var benchArgs = []string{
	"--rate-per-source", "1000000/1s", "--rate-global", "1000000/1s",
	"--trusted-proxies", "127.0.0.1/32", "--log-level", "warn",
}

// StartLocal starts an n-node cluster of binary under dir with
// localcluster; with pprof, every node serves Go's profiler.
func StartLocal(ctx context.Context, binary string, n int, dir string, pprof bool, logf func(string, ...any)) (*Target, error) {
	c, err := localcluster.Start(ctx, localcluster.Options{
		Binary: binary, Nodes: n, Dir: dir, Args: benchArgs, Logf: logf, Direct: true, Pprof: pprof,
	})
	if err != nil {
		return nil, err
	}
	t := &Target{close: c.Close}
	for _, nd := range c.Nodes() {
		t.URLs = append(t.URLs, nd.URL)
		t.DataDirs = append(t.DataDirs, nd.DataDir)
		t.Pids = append(t.Pids, nd.Pid())
		t.PprofAddrs = append(t.PprofAddrs, nd.PprofAddr)
	}
	return t, nil
}

// Remote targets a running cluster by its nodes' URLs.
func Remote(urls []string) *Target {
	t := &Target{}
	for _, u := range urls {
		if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" {
			t.URLs = append(t.URLs, u)
			t.DataDirs = append(t.DataDirs, "")
			t.Pids = append(t.Pids, 0)
		}
	}
	return t
}

// Leader returns the index of the node that reports itself leader.
func (t *Target) Leader(ctx context.Context, cl *Client) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		for i, u := range t.URLs {
			if v, err := cl.Gauge(ctx, u, "restarea_raft_is_leader"); err == nil && v == 1 {
				return i, nil
			}
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("no node reports itself leader")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Follower returns the index of a node other than the leader (the leader
// itself in a cluster of one).
func (t *Target) Follower(ctx context.Context, cl *Client) (int, error) {
	l, err := t.Leader(ctx, cl)
	if err != nil {
		return -1, err
	}
	if len(t.URLs) == 1 {
		return l, nil
	}
	return (l + 1) % len(t.URLs), nil
}
