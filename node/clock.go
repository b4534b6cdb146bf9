package node

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/cluster"
)

// clockGuard is this node's judgement of time. The replicated clock (the
// state machine's, fsm.Clock) moves only when a leader stamps a command,
// and the leader stamps with its wall clock, which can be stepped by a bad
// NTP server or a VM restored with a wrong clock. The guard measures the
// cluster's time independently of the wall clock: it anchors on the
// replicated clock whenever that advances while this node is caught up,
// and extrapolates with the monotonic clock, which no step moves. The
// leader stamps its wall clock only when it agrees with that measure
// (stamp); otherwise it stamps the measure.
type clockGuard struct {
	wall func() time.Time
	mono func() time.Duration
	tol  time.Duration

	mu sync.Mutex
	// base is the cluster time (Unix ns) the guard anchored on at mono
	// reading at; fresh is true once the anchor was measured while this
	// process was running and caught up (not read back from disk).
	base  int64
	at    time.Duration
	fresh bool
	// seen is the last replicated clock observed, caughtUp whether the
	// node had applied everything committed when it looked.
	seen     int64
	caughtUp bool
	// newSeen counts advances seen while caught up before and after.
	newSeen int

	// A vote (asking the voters' clocks) runs one at a time, and a failed
	// one is not repeated for voteEvery.
	voteMu   sync.Mutex
	lastVote time.Duration
	voted    bool

	// Guarded by mu: the disagreement as last reported (a log line on
	// each change), whether this node as leader refused to stamp for want
	// of a vote, and the last hand-over because of either.
	disagrees  bool
	unvouched  bool
	lastHandOv time.Duration
}

// voteEvery bounds how often a node asks the voters' clocks.
const voteEvery = time.Second

func newClockGuard(wall func() time.Time, mono func() time.Duration, tol time.Duration, clock int64) *clockGuard {
	g := &clockGuard{wall: wall, mono: mono, tol: tol, base: clock, seen: clock}
	g.at = mono()
	return g
}

// processMonotonic returns the time elapsed since the first call, read
// from the monotonic clock (time.Since uses it), which clock steps do not
// move.
func processMonotonic() func() time.Duration {
	start := time.Now()
	return func() time.Duration { return time.Since(start) }
}

// cluster returns the cluster time this node vouches for (Unix ns) and
// whether that is measured (fresh) rather than the last time on disk.
func (g *clockGuard) cluster() (int64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.base + int64(g.mono()-g.at), g.fresh
}

// observe tells the guard the replicated clock; caughtUp is whether this
// node has applied everything committed. It is called on a timer. An
// advance past the guard's own measure re-anchors it: a leader stamped
// it, and leaders stamp only times they vouch for. The guard becomes fresh
// (its measure is of now) at an advance seen while the node was caught up
// before and after it: that entry was committed since the last look, so
// it is new (the second such one, see below). An advance while catching
// up, or the last entry of a catch-up, may be old (the leader stamps at least once an expiry
// interval, but a restarted node may find a backlog), so it anchors
// without making the guard fresh.
func (g *clockGuard) observe(clock int64, caughtUp bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	was := g.caughtUp
	g.caughtUp = caughtUp
	if clock == g.seen {
		return
	}
	g.seen = clock
	now := g.mono()
	if clock > g.base+int64(now-g.at) {
		g.base, g.at = clock, now
	}
	if caughtUp && was {
		// The second such advance: the first may be the end of a
		// catch-up that looked complete (a restarted follower's commit
		// index trails the leader's until the leader's entries arrive).
		if g.newSeen++; g.newSeen >= 2 {
			g.fresh, g.unvouched = true, false
		}
	}
}

// vouch re-anchors the guard at t, a time a majority of voters agreed on.
func (g *clockGuard) vouch(t int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.base, g.at, g.fresh, g.unvouched = t, g.mono(), true, false
}

// report is this node's answer to a peer asking its clock.
func (g *clockGuard) report() *cluster.ClockReport {
	c, fresh := g.cluster()
	return &cluster.ClockReport{Wall: g.wall().UnixNano(), Cluster: c, Fresh: fresh}
}

// agrees reports whether a voter's report agrees with time t (Unix ns), as
// read at the middle of the request: a voter with a measured cluster time
// judges by it, one without (just restarted) by its wall clock.
func (g *clockGuard) agrees(r *cluster.ClockReport, t int64) bool {
	if r == nil {
		return false
	}
	v := r.Wall
	if r.Fresh {
		v = r.Cluster
	}
	d := v - t
	return d >= -int64(g.tol) && d <= int64(g.tol)
}

// skew is the wall clock minus the cluster time this node vouches for,
// and whether that is measured.
func (g *clockGuard) skew() (time.Duration, bool) {
	c, fresh := g.cluster()
	return time.Duration(g.wall().UnixNano() - c), fresh
}

// ClockSkew is this node's wall clock minus the cluster time it measures
// (the replicated clock carried forward by the monotonic clock), and
// whether that measure is known yet (false until the node has seen the
// replicated clock advance since it started).
func (n *Node) ClockSkew() (time.Duration, bool) { return n.clock.skew() }

// stampTime returns the time the leader stamps a command with (Unix ns):
// its wall clock when that is at most the tolerance ahead of the cluster
// time this node measures (even an unmeasured one, the clock on disk
// carried forward, is never ahead of real time, so neither is the stamp).
// A wall clock further ahead is not stamped: a node that measured the
// cluster's time stamps the measure (and, its clock disagreeing, hands
// leadership over, see checkClock); a node that has not (just started)
// asks the voters, stamps its clock if a majority agrees, and otherwise
// refuses the command with 503 and hands leadership over — its stale
// measure would lag by the whole outage, and entries stamped with it
// would make every follower's measure lag too. A wall clock behind is
// stamped as it is: the state machine never lets time go back
// (fsm.advanceClock), so it costs nothing but a pause in time.
func (n *Node) stampTime(ctx context.Context) (int64, error) {
	g := n.clock
	wall := g.wall().UnixNano()
	c, fresh := g.cluster()
	switch {
	case wall <= c+int64(g.tol):
		return wall, nil
	case fresh:
		n.met.clockClamped.Inc()
		return c, nil
	case n.clockVote(ctx, wall):
		return wall, nil
	case n.fsm.Clock() == 0:
		// Nothing was ever stamped (a new cluster, whose voters did not
		// all answer yet): there is no time to measure from, and nothing
		// stored that a wrong clock could expire.
		return wall, nil
	}
	g.mu.Lock()
	g.unvouched = true
	g.mu.Unlock()
	n.met.clockRefused.Inc()
	return 0, unavailable("the leader cannot vouch for its clock (%s): it has not measured the cluster's time since it started, and a majority of voters does not agree with its clock; leadership moves to a node whose clock agrees; retry with the same request_id",
		time.Unix(0, wall).UTC().Format(time.RFC3339))
}

// clockVote asks every voter for its clock and reports whether a majority
// (this node included) agrees with wall; if so the guard re-anchors on it.
// Only a node that has no measured cluster time (just started) asks: a
// node that measures one trusts its monotonic clock over any vote, so a
// wall-clock step on a majority of nodes at once is still refused by the
// leader that measured time pass. At most one vote runs at a time, and a
// failed one is not repeated for voteEvery (stampers meanwhile use the
// measured time).
func (n *Node) clockVote(ctx context.Context, wall int64) bool {
	g := n.clock
	if !g.voteMu.TryLock() {
		return false
	}
	defer g.voteMu.Unlock()
	if g.voted && g.mono()-g.lastVote < voteEvery {
		return false
	}
	g.voted, g.lastVote = true, g.mono()
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	voters, yes := 0, 0
	type answer struct {
		r   *cluster.ClockReport
		mid int64
	}
	answers := make(chan answer)
	asked := 0
	vctx, cancel := context.WithTimeout(ctx, voteEvery)
	defer cancel()
	for _, s := range f.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if s.ID == raft.ServerID(n.id) {
			yes++ // not fresh: this node judges by its wall clock
			continue
		}
		asked++
		go func(addr string) {
			before := g.wall().UnixNano()
			p, err := n.peers.PeerAt(vctx, addr)
			after := g.wall().UnixNano()
			if err != nil {
				p.Clock = nil
			}
			answers <- answer{p.Clock, before/2 + after/2}
		}(string(s.Address))
	}
	for i := 0; i < asked; i++ {
		a := <-answers
		// Compare the voter's time with ours at the same instant, the
		// middle of the request.
		if g.agrees(a.r, a.mid) {
			yes++
		}
	}
	if voters == 0 || 2*yes <= voters {
		n.log.Warn("clock vote: a majority of voters does not agree with this node's clock; stamping the measured cluster time",
			"wall", time.Unix(0, wall).UTC(), "agree", yes, "voters", voters, "tolerance", g.tol.String())
		return false
	}
	g.vouch(wall)
	n.log.Info("clock vote: a majority of voters agrees with this node's clock", "wall", time.Unix(0, wall).UTC(), "agree", yes, "voters", voters)
	return true
}

// clockLoop feeds the guard the replicated clock, reports a wall clock
// that disagrees with the cluster's (log line on each change, metric), and
// hands leadership over while this node leads with such a clock, so that
// a node whose clock is right stamps the commands.
func (n *Node) clockLoop() {
	defer n.wg.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		n.checkClock()
	}
}

// handOverEvery bounds how often a leader whose clock disagrees hands
// leadership over (a cluster where every clock disagrees must not spend
// its time in elections).
const handOverEvery = 30 * time.Second

func (n *Node) checkClock() {
	g := n.clock
	g.observe(n.fsm.Clock(), n.caughtUp(n.raft.CommitIndex()))
	skew, fresh := g.skew()
	bad := fresh && (skew > g.tol || skew < -g.tol)
	g.mu.Lock()
	changed := bad != g.disagrees
	g.disagrees = bad
	handOver := (bad || g.unvouched) && n.IsLeader() && cluster.Voters(n.raft) > 1 && (g.lastHandOv == 0 || g.mono()-g.lastHandOv >= handOverEvery)
	if handOver {
		g.lastHandOv = g.mono()
	}
	g.mu.Unlock()
	switch {
	case changed && bad:
		n.met.clockDisagreements.Inc()
		c, _ := g.cluster()
		n.log.Error("this node's clock disagrees with the cluster's: commands it stamps as leader carry the measured cluster time, not its clock; fix its time source (NTP)",
			"skew", skew.Round(time.Millisecond).String(), "wall", g.wall().UTC(), "cluster_time", time.Unix(0, c).UTC(), "tolerance", g.tol.String())
	case changed:
		n.log.Info("this node's clock agrees with the cluster's again", "skew", skew.Round(time.Millisecond).String())
	}
	if handOver {
		n.log.Warn("handing leadership over: this node's clock disagrees with the cluster's, or a majority of voters did not confirm it", "skew", skew.Round(time.Millisecond).String(), "measured", fresh)
		if err := n.raft.LeadershipTransfer().Error(); err != nil {
			n.log.Warn("clock hand-over failed", "err", err)
		}
	}
}

// clockStatus is the clock part of ClusterStatus.
func (n *Node) clockStatus() *restarea.ClockStatus {
	skew, fresh := n.clock.skew()
	c, _ := n.clock.cluster()
	st := &restarea.ClockStatus{
		Known:            fresh,
		Agrees:           !fresh || (skew <= n.clock.tol && skew >= -n.clock.tol),
		SkewSeconds:      skew.Seconds(),
		ToleranceSeconds: n.clock.tol.Seconds(),
	}
	if c > 0 {
		st.ClusterTime = time.Unix(0, c).UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
	}
	return st
}
