package node

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// expireBatch bounds one expiry command, so retention never makes one huge
// transaction; the leader repeats at once while there is more to expire.
const expireBatch = 1000

// leaderLoop runs the leader's duties: on gaining leadership it seeds the
// configured limits, and while leader it proposes expiry on a timer (and
// the backfill of body fingerprints, while one is left: backfill.go).
// Decisions about time are the leader's, replicated as commands, so every
// node drops the same entries.
func (n *Node) leaderLoop() {
	defer n.wg.Done()
	obs := make(chan raft.Observation, 8)
	o := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	n.raft.RegisterObserver(o)
	defer n.raft.DeregisterObserver(o)

	tick := time.NewTicker(n.cfg.ExpireInterval)
	defer tick.Stop()
	wasLeader := false
	check := func() {
		leader := n.IsLeader()
		if leader && !wasLeader {
			n.becameLeader()
		}
		wasLeader = leader
	}
	check()
	for {
		select {
		case <-n.stop:
			return
		case <-obs:
			check()
		case <-n.backfillKick:
			check()
			if wasLeader {
				n.backfill()
			}
		case <-tick.C:
			check()
			if wasLeader {
				n.confirmApplied()
				n.enableLogV2()
				n.maybeAutoFinalize()
				n.expire()
				n.backfill()
			}
		}
	}
}

// confirmApplied marks the leader ready once everything committed before
// its term is in its state machine. Until then raft's commit index can
// trail what was committed before (a node that restarts on a rebuilt
// state file replays the log only after its first commit in the new
// term), and reads would miss acknowledged writes.
func (n *Node) confirmApplied() {
	term := n.raft.CurrentTerm()
	if n.readyTerm.Load() == term {
		return
	}
	if err := n.untilStop(n.raft.Barrier(n.cfg.ApplyTimeout)); err != nil {
		level := n.faultLevel()
		if errors.Is(err, raft.ErrAbortedByRestore) {
			// A snapshot restore (restarea restore) replaced the state
			// meanwhile: expected, and the next check confirms it.
			level = min(level, slog.LevelInfo)
		}
		n.log.Log(context.Background(), level, "new leader could not confirm its state is complete; retrying", "err", err)
		return
	}
	n.readyTerm.Store(term)
}

// untilStop returns f's error once raft settles it, or ErrRaftShutdown as
// soon as the node stops. A barrier may never commit: a leader that cannot
// send its log (a damaged entry, logcheck.go) still holds the lease of the
// follower it heartbeats, and the leader loop waiting on it must not keep
// the node from stopping.
func (n *Node) untilStop(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }() // ends when raft settles the future (at the latest when it shuts down)
	select {
	case err := <-done:
		return err
	case <-n.stop:
		return raft.ErrRaftShutdown
	}
}

// leaderReadIndex returns the index a linearizable read must wait for:
// the commit index, read only once this leader has committed an entry of
// its own term (before that, raft's commit index can trail writes the
// previous leader acknowledged), then confirmed by a quorum still
// following this leader in the same term.
func (n *Node) leaderReadIndex() (uint64, error) {
	term := n.raft.CurrentTerm()
	if n.readyTerm.Load() != term {
		n.confirmApplied()
		if n.readyTerm.Load() != term {
			return 0, errors.New("the new leader has not yet committed an entry of its term")
		}
	}
	idx := n.raft.CommitIndex()
	if err := n.raft.VerifyLeader().Error(); err != nil {
		return 0, err
	}
	if n.raft.CurrentTerm() != term {
		return 0, errors.New("the term changed during the read")
	}
	return idx, nil
}

func (n *Node) enableLogV2() {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ApplyTimeout)
	defer cancel()
	n.maybeEnableLogV2(ctx)
}

func (n *Node) becameLeader() {
	n.log.Info("became leader", "node_id", n.id, "term", n.raft.CurrentTerm())
	n.confirmApplied()
	n.formAtInitialVersion()
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ApplyTimeout)
	defer cancel()
	per, glob := n.cfg.RatePerSource, n.cfg.RateGlobal
	_, err := n.propose(ctx, &fsm.Command{Op: fsm.OpConfigure, Settings: &fsm.SettingsCommand{
		FromConfig: true,
		Patch:      restarea.SettingsPatch{PerSourceLimit: &per, GlobalLimit: &glob},
	}})
	if err != nil {
		n.log.Log(context.Background(), n.faultLevel(), "could not apply configured limits", "err", err)
	}
	n.announceSelf(ctx)
	n.enableLogV2()
	n.maybeAutoFinalize()
	n.expire()
	n.backfill()
}

// Expire proposes expiry commands until nothing is left to expire (or
// this node stops being the leader). Exported for tests that drive time
// with an injected clock.
func (n *Node) Expire() { n.expire() }

// largeExpiryShare is the share of the stored entries past which an
// expiry pass is logged before it runs (WARN, with the counts and the
// clock it measures by) and counted: an operator sees any pass that
// removes much of the board, whether a lowered retention, a long outage
// or a clock explains it.
const largeExpiryShare = 0.1

// minLargeExpiry keeps a small board's daily expiry out of the warning.
const minLargeExpiry = 50

func (n *Node) expire() {
	n.warnLargeExpiry()
	for i := 0; i < 100 && n.IsLeader(); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ApplyTimeout)
		res, err := n.propose(ctx, &fsm.Command{Op: fsm.OpExpire, Expire: &fsm.ExpireCommand{
			Retention: n.cfg.Retention, TombstoneRetention: n.cfg.TombstoneRetention, MaxItems: expireBatch,
		}})
		cancel()
		if err != nil {
			n.log.Log(context.Background(), n.faultLevel(), "expiry failed", "err", err)
			return
		}
		if res.Expired > 0 {
			n.log.Info("expired entries, tombstones and audit records", "count", res.Expired)
			n.met.expired.Add(float64(res.Expired))
		}
		if res.Expired < expireBatch {
			return
		}
	}
}

// warnLargeExpiry logs, before a pass, when the pass would remove more
// than largeExpiryShare of the stored entries.
func (n *Node) warnLargeExpiry() {
	if n.cfg.Retention <= 0 {
		return
	}
	total, err := n.fsm.Count()
	if err != nil || total == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	now, err := n.stampTime(ctx)
	cancel()
	if err != nil {
		return // the pass itself is refused the same way
	}
	// Count one past the threshold at most: enough to decide, bounded.
	limit := max(int(float64(total)*largeExpiryShare)+1, minLargeExpiry)
	due, err := n.fsm.ExpiryDue(now-int64(n.cfg.Retention), limit)
	if err != nil || due < limit {
		return
	}
	n.met.expireLarge.Inc()
	skew, known := n.clock.skew()
	n.log.Warn("expiry is about to remove a large share of the stored entries: check the clock and --retention if this is not expected",
		"due_at_least", due, "stored", total, "share_over", largeExpiryShare, "retention", n.cfg.Retention,
		"clock", time.Unix(0, now).UTC(), "replicated_clock", time.Unix(0, n.fsm.Clock()).UTC(),
		"clock_skew", skew.Round(time.Millisecond).String(), "clock_skew_known", known)
}
