// Package testnode starts real rest.area nodes for tests: raft over TCP
// on loopback, the raft log and the state in bbolt files under the test's
// temporary directory, HTTP on a free loopback port. Nothing is faked.
// It is the one way tests start an in-process node or cluster.
package testnode

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/node"
)

// Option changes the configuration of a test node.
type Option func(*server.Config)

// WithAdminToken turns the admin API on with token.
func WithAdminToken(token string) Option { return func(c *server.Config) { c.AdminToken = token } }

// WithLimits sets the configured per-source and site-wide limits.
func WithLimits(perSource, global restarea.Limit) Option {
	return func(c *server.Config) { c.RatePerSource, c.RateGlobal = perSource, global }
}

// WithClock makes the leader stamp commands with now.
func WithClock(now func() time.Time) Option { return func(c *server.Config) { c.Now = now } }

// WithDataDir uses dir instead of a fresh temporary directory (to restart a
// node on its data).
func WithDataDir(dir string) Option { return func(c *server.Config) { c.DataDir = dir } }

// FormedByV010 forms a new cluster at cluster version 1, as v0.1.0 and
// every release before it did, for tests of what an upgrade finalizes.
func FormedByV010() Option { return func(c *server.Config) { c.InitialClusterVersion = 1 } }

// WithConfig applies an arbitrary change.
func WithConfig(f func(*server.Config)) Option { return Option(f) }

// Config returns the configuration Start uses: loopback ports chosen by
// the kernel, fast raft timeouts, generous limits.
func Config(t testing.TB, opts ...Option) server.Config {
	return configIn(t.TempDir(), opts...)
}

// configIn is Config with its data under dir.
func configIn(dir string, opts ...Option) server.Config {
	c := server.Config{Config: node.Defaults()}
	c.DataDir = dir
	c.HTTPAddr = "127.0.0.1:0"
	c.RaftAddr = "127.0.0.1:0"
	c.HeartbeatTimeout = 200 * time.Millisecond
	c.ElectionTimeout = 200 * time.Millisecond
	c.LeaderLeaseTimeout = 100 * time.Millisecond
	c.RatePerSource = restarea.Limit{Count: 100000, WindowSeconds: 60}
	c.RateGlobal = restarea.Limit{Count: 1000000, WindowSeconds: 3600}
	// Every test client is 127.0.0.1: searches are not limited unless a
	// test sets its own search limits.
	c.SearchRatePerSource = restarea.Limit{Count: 1000000, WindowSeconds: 60}
	// Every test client is 127.0.0.1: the bound on expensive requests per
	// source would make parallel tests wait on each other.
	c.MaxExpensive, c.MaxExpensivePerSource = -1, -1
	c.SearchConcurrency, c.SearchPerSourceConcurrency = 64, 1024
	c.ExpireInterval = time.Hour
	c.Logger = Logger()
	c.RaftLogOutput = io.Discard
	if os.Getenv("RESTAREA_TEST_LOG") != "" {
		c.RaftLogOutput = nil // raft's lines go through Logger, component=raft
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Logger returns the logger test nodes use: silent unless the
// RESTAREA_TEST_LOG environment variable is set.
func Logger() *slog.Logger {
	if os.Getenv("RESTAREA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// Start starts a single-node cluster, waits until it has elected itself
// and is ready, and closes it when the test ends.
func Start(t testing.TB, opts ...Option) *node.Node {
	t.Helper()
	return StartConfig(t, Config(t, opts...))
}

// StartConfig starts a node with cfg and closes it when the test ends.
func StartConfig(t testing.TB, cfg server.Config) *node.Node {
	t.Helper()
	n, err := server.Start(cfg)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(func() { n.Close() })
	WaitReady(t, n)
	waitSettings(t, n, cfg)
	return n
}

// waitSettings waits until the configured limits are in force: a new
// leader applies them through the log moments after it is elected.
func waitSettings(t testing.TB, n *node.Node, cfg server.Config) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, "node "+n.ID()+" to apply the configured limits", func() error {
		s, err := n.Settings(context.Background())
		if err == nil && (s.PerSourceLimit != cfg.RatePerSource || s.GlobalLimit != cfg.RateGlobal) {
			err = fmt.Errorf("settings %+v", s)
		}
		return err
	})
}

// WaitReady waits (up to 20s) until n has a leader and has caught up.
func WaitReady(t testing.TB, n *node.Node) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, "node "+n.ID()+" to be ready", n.Ready)
}

// LargeThread posts a question and replies replies to it on n, every body
// restarea.MaxBody emoji (80,000 bytes) by the actor "pager", and returns
// the question's id and the replies' ids in order: a thread whose pages
// end at restarea.MaxPageBytes, not at their count.
func LargeThread(t testing.TB, n *node.Node, replies int) (string, []string) {
	t.Helper()
	big := strings.Repeat("\U0001F600", restarea.MaxBody)
	post := func(typ, parent, title string) restarea.PostRequest {
		return restarea.PostRequest{RequestID: uuid.NewString(), Type: typ, ParentID: parent, Title: title, Body: big,
			Actor: restarea.Actor{Name: "pager"}, SubmissionMode: restarea.ModeAutonomous}
	}
	q := Post(t, n, post(restarea.TypeQuestion, "", "large replies")).Entry.ID
	ids := make([]string, replies)
	for i := range ids {
		ids[i] = Post(t, n, post(restarea.TypeReply, q, "")).Entry.ID
	}
	return q, ids
}
