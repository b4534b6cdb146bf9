package node_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// year is how far the tests step a wall clock.
const year = 365 * 24 * time.Hour

// skewClock is one node's wall clock: real time plus an offset the test
// steps. The node's monotonic clock stays the real one, as a clock step
// leaves it.
type skewClock struct{ off atomic.Int64 }

func (c *skewClock) Now() time.Time      { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *skewClock) set(d time.Duration) { c.off.Store(int64(d)) }

// clockCluster starts three nodes, each with its own wall clock, expiring
// often, with limits no test reaches.
func clockCluster(t *testing.T) ([]*node.Node, []*skewClock) {
	t.Helper()
	clocks := []*skewClock{{}, {}, {}}
	i := 0
	nodes := testnode.StartCluster(t, 3,
		testnode.WithLimits(restarea.Limit{Count: 10000, WindowSeconds: 60}, restarea.Limit{Count: 100000, WindowSeconds: 3600}),
		testnode.WithConfig(func(c *server.Config) {
			c.Now = clocks[i].Now
			i++
			c.ExpireInterval = 100 * time.Millisecond
			c.Retention = 90 * 24 * time.Hour
			c.TombstoneRetention = 30 * 24 * time.Hour
		}))
	return nodes, clocks
}

func clockOf(nodes []*node.Node, clocks []*skewClock, n *node.Node) *skewClock {
	for i, m := range nodes {
		if m == n {
			return clocks[i]
		}
	}
	return nil
}

// board is what the tests post and expect to keep.
type board struct {
	t       *testing.T
	nodes   []*node.Node
	ids     []string
	deleted restarea.PostRequest
	posts   atomic.Int64
	refused atomic.Int64
}

// post sends a question through node i: it must succeed, or be refused
// with a clear 503 unavailable.
func (b *board) post(i int) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	meta := restarea.PostMeta{Source: fmt.Sprintf("192.0.2.%d", i+1), Channel: restarea.ChannelHTTP}
	res, err := b.nodes[i%len(b.nodes)].Post(ctx, testkit.Question("How do retries work?"), meta)
	switch {
	case err == nil:
		b.ids = append(b.ids, res.Entry.ID)
		b.posts.Add(1)
	case restarea.ErrorCode(err) == restarea.CodeUnavailable && restarea.ErrorMessage(err) != "":
		b.refused.Add(1)
	default:
		b.t.Fatalf("post through node %d: %v (want success or 503 unavailable)", i, err)
	}
}

// check asserts that every acknowledged entry is still stored on every
// node, that the deleted request still answers 410 (its tombstone is
// there), and that no created_at lies in the future beyond the tolerance.
func (b *board) check() {
	b.t.Helper()
	b.checkAt(0, true)
}

// checkAt is check for clocks offset ahead of real time, optionally
// without the tombstone (which a legitimate month may expire).
func (b *board) checkAt(offset time.Duration, tomb bool) {
	b.t.Helper()
	ctx := context.Background()
	limit := time.Now().Add(offset + node.Defaults().ClockTolerance)
	for _, n := range b.nodes {
		if !waitFor(5*time.Second, func() bool { return n.Ready() == nil && caughtUpWith(n, b.nodes) }) {
			b.t.Fatalf("node %s did not catch up", n.ID())
		}
		seen := map[string]bool{}
		cursor := ""
		for {
			page, err := n.ListEntries(ctx, restarea.ListOptions{Cursor: cursor, Limit: 100})
			if err != nil {
				b.t.Fatalf("list on %s: %v", n.ID(), err)
			}
			for _, e := range page.Entries {
				seen[e.ID] = true
				if e.CreatedAt.After(limit) {
					b.t.Fatalf("node %s: entry %s created_at %s is in the future (now %s)", n.ID(), e.ID, e.CreatedAt, time.Now().UTC())
				}
			}
			if page.NextCursor == nil {
				break
			}
			cursor = *page.NextCursor
		}
		for _, id := range b.ids {
			if !seen[id] {
				b.t.Fatalf("node %s: acknowledged entry %s is gone (expired early)", n.ID(), id)
			}
		}
	}
	if !tomb {
		return
	}
	meta := restarea.PostMeta{Source: "192.0.2.200", Channel: restarea.ChannelHTTP}
	if _, err := b.nodes[0].Post(ctx, b.deleted, meta); restarea.ErrorCode(err) != restarea.CodeDeleted && restarea.ErrorCode(err) != restarea.CodeUnavailable {
		b.t.Fatalf("replay of a deleted request: %v, want 410 deleted (the tombstone expired early?)", err)
	}
}

func caughtUpWith(n *node.Node, nodes []*node.Node) bool {
	st, err := n.ClusterStatus(context.Background())
	if err != nil {
		return false
	}
	for _, m := range nodes {
		if m.IsLeader() {
			ls, err := m.ClusterStatus(context.Background())
			return err == nil && st.AppliedIndex >= ls.CommitIndex
		}
	}
	return false
}

func newBoard(t *testing.T, nodes []*node.Node) *board {
	b := &board{t: t, nodes: nodes}
	for i := 0; i < 9; i++ {
		b.post(i)
	}
	ctx := context.Background()
	b.deleted = testkit.Question("How do retries work?")
	res, err := nodes[0].Post(ctx, b.deleted, restarea.PostMeta{Source: "192.0.2.100", Channel: restarea.ChannelHTTP})
	if err != nil {
		t.Fatal(err)
	}
	if err := nodes[len(nodes)-1].DeleteEntry(ctx, res.Entry.ID); err != nil {
		t.Fatal(err)
	}
	return b
}

// clockReport returns what /api/v1/cluster says about n's clock.
func clockReport(t *testing.T, n *node.Node) restarea.ClockStatus {
	t.Helper()
	st, err := n.ClusterStatus(context.Background())
	if err != nil || st.Clock == nil {
		t.Fatalf("cluster status of %s: %+v %v", n.ID(), st.Clock, err)
	}
	return *st.Clock
}

// A leader whose wall clock jumps a year ahead, then back, moves neither
// the board's clock nor its expiry: no entry or tombstone expires early,
// no created_at lies in the future, posts keep working. The node says its
// clock disagrees (log, /api/v1/cluster, metric) and hands leadership over.
func TestLeaderClockJumpsAYearAndBack(t *testing.T) {
	nodes, clocks := clockCluster(t)
	b := newBoard(t, nodes)
	leader := testnode.Leader(t, nodes)
	lc := clockOf(nodes, clocks, leader)

	lc.set(year)
	// Writes and expiry passes while the clock is off, through every node,
	// before and after the node noticed (it checks every 250 ms).
	for i := 0; i < 12; i++ {
		b.post(i)
		if i%4 == 0 {
			leader.Expire()
		}
	}
	if !waitFor(5*time.Second, func() bool { c := clockReport(t, leader); return c.Known && !c.Agrees }) {
		t.Fatalf("the node with the stepped clock does not report it: %+v", clockReport(t, leader))
	}
	if c := clockReport(t, leader); c.SkewSeconds < year.Seconds()-60 {
		t.Fatalf("skew %v s, want about a year", c.SkewSeconds)
	}
	// The report is computed when asked; the metric counts at the next
	// periodic check (every 250 ms).
	var m string
	if !waitFor(5*time.Second, func() bool {
		m = scrape(t, leader)
		return strings.Contains(m, "restarea_clock_disagreements_total 1")
	}) {
		t.Fatalf("metric restarea_clock_disagreements_total not 1 on the stepped node:\n%s", grepLines(m, "restarea_clock"))
	}
	for _, n := range nodes {
		if n != leader {
			if c := clockReport(t, n); !c.Agrees {
				t.Fatalf("node %s with a right clock reports disagreement: %+v", n.ID(), c)
			}
		}
	}
	// It hands leadership over to a node whose clock is right.
	if !waitFor(10*time.Second, func() bool { l := testnode.Leader(t, nodes); return l != leader }) {
		t.Fatal("the leader with a stepped clock kept leadership")
	}
	for i := 0; i < 6; i++ {
		b.post(i)
	}
	testnode.Leader(t, nodes).Expire()
	b.check()

	lc.set(0)
	if !waitFor(5*time.Second, func() bool { return clockReport(t, leader).Agrees }) {
		t.Fatalf("clock back, still reported as disagreeing: %+v", clockReport(t, leader))
	}
	for i := 0; i < 6; i++ {
		b.post(i)
	}
	testnode.Leader(t, nodes).Expire()
	b.check()
	if b.posts.Load() == 0 {
		t.Fatal("no post succeeded")
	}
	t.Logf("posts: %d acknowledged, %d refused with 503", b.posts.Load(), b.refused.Load())
}

// A node whose clock is a year ahead wins an election (a leadership
// transfer to it): what it stamps is the cluster's time, not its clock.
func TestSkewedNodeWinsElection(t *testing.T) {
	nodes, clocks := clockCluster(t)
	b := newBoard(t, nodes)
	leader := testnode.Leader(t, nodes)
	var skewed *node.Node
	for _, n := range nodes {
		if n != leader {
			skewed = n
			break
		}
	}
	clockOf(nodes, clocks, skewed).set(year)
	ctx := context.Background()
	if err := leader.TransferLeadership(ctx, skewed.ID()); err != nil {
		t.Fatalf("transfer to the skewed node: %v", err)
	}
	won := false
	for i := 0; i < 12; i++ {
		won = won || skewed.IsLeader()
		b.post(i)
		if skewed.IsLeader() {
			skewed.Expire()
		}
	}
	if !won {
		t.Log("the skewed node lost leadership before the writes (it hands over once it notices its clock)")
	}
	b.check()
	for i := 0; i < 6; i++ {
		b.post(i)
	}
	testnode.Leader(t, nodes).Expire()
	b.check()
}

// A single node measures time by its monotonic clock too: a step of its
// wall clock is not stamped (there is no one else to ask, but the node
// saw the time pass).
func TestSingleNodeClockStep(t *testing.T) {
	c := &skewClock{}
	n := testnode.Start(t, testnode.WithClock(c.Now))
	nodes := []*node.Node{n}
	b := newBoard(t, nodes)
	if !waitFor(5*time.Second, func() bool { return clockReport(t, n).Known }) {
		t.Fatal("clock never measured")
	}
	c.set(year)
	for i := 0; i < 5; i++ {
		b.post(i)
	}
	n.Expire()
	b.check()
	if m := scrape(t, n); !strings.Contains(m, "restarea_clock_clamped_total") || strings.Contains(m, "restarea_clock_clamped_total 0") {
		t.Fatalf("no clamped stamps counted:\n%s", grepLines(m, "restarea_clock"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// restartAll stops every node and starts each again on its data and raft
// address, with the wall clocks given (the monotonic clock of the new
// processes starts afresh, as after a real restart: no node has measured
// the cluster's time when the first leader is elected).
func restartAll(t *testing.T, nodes []*node.Node, clocks []*skewClock) []*node.Node {
	t.Helper()
	type saved struct{ dir, raft string }
	var keep []saved
	for _, n := range nodes {
		keep = append(keep, saved{n.DataDir(), n.RaftAddr()})
	}
	for _, n := range nodes {
		n.Close()
	}
	out := make([]*node.Node, len(nodes))
	for i, k := range keep {
		cfg := testnode.Config(t, testnode.WithDataDir(k.dir), testnode.WithConfig(func(c *server.Config) {
			c.RaftAddr = k.raft
			c.ClusterSecret = testnode.Secret
			c.Now = clocks[i].Now
			c.ExpireInterval = 100 * time.Millisecond
			c.Retention = 90 * 24 * time.Hour
			c.TombstoneRetention = 30 * 24 * time.Hour
		}))
		n, err := server.Start(cfg)
		if err != nil {
			t.Fatalf("restart node %d: %v", i, err)
		}
		t.Cleanup(func() { n.Close() })
		out[i] = n
	}
	testnode.WaitMembers(t, out, len(out))
	return out
}

// After a whole-cluster outage the board's time must still advance: every
// node restarts with its clock a month on (a real month passed), none has
// measured anything, and the first leader asks the voters, who agree. A
// node whose clock is a year ahead at the same restart is outvoted, should
// it win the election, and what it stamps is never in the future.
func TestRestartAfterOutage(t *testing.T) {
	nodes, clocks := clockCluster(t)
	b := newBoard(t, nodes)
	month := 30 * 24 * time.Hour
	// The month of outage: every clock is a month on. (The tombstone,
	// 30 days, may legitimately expire now; the entries, 90 days, not.)
	for i, c := range clocks {
		c.set(month)
		if i == 2 {
			c.set(month + year)
		}
	}
	nodes = restartAll(t, nodes, clocks)
	b.nodes = nodes
	ctx := context.Background()
	tol := node.Defaults().ClockTolerance
	// Post until the board's time has caught up with the month (at once,
	// or once a year-ahead leader handed over), never beyond it.
	advanced := false
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; (i < 9 || !advanced) && time.Now().Before(deadline); i++ {
		ctxp, cancel := context.WithTimeout(ctx, 15*time.Second)
		res, err := nodes[i%3].Post(ctxp, testkit.Question("How do retries work?"), restarea.PostMeta{Source: fmt.Sprintf("192.0.2.%d", i%200+1), Channel: restarea.ChannelHTTP})
		cancel()
		if err != nil {
			if restarea.ErrorCode(err) == restarea.CodeUnavailable {
				continue
			}
			t.Fatalf("post after the restart: %v", err)
		}
		b.ids = append(b.ids, res.Entry.ID)
		now := time.Now().Add(month)
		if res.Entry.CreatedAt.After(now.Add(tol)) {
			t.Fatalf("created_at %s after the restart is ahead of the month-on time %s", res.Entry.CreatedAt, now)
		}
		advanced = advanced || res.Entry.CreatedAt.After(now.Add(-time.Minute))
	}
	if !advanced {
		t.Fatalf("created_at never advanced to the month-on time: a real outage must let time advance")
	}
	testnode.Leader(t, nodes).Expire()
	// Every acknowledged entry is still there (90-day retention) on every
	// node, and nothing lies beyond the month-on time.
	b.checkAt(month, false)
}
