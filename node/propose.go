package node

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// errNotApplied marks raft errors after which the command certainly was
// not appended, so trying again cannot apply it twice.
var errNotApplied = errors.New("not applied")

func unavailable(format string, args ...any) *restarea.Error {
	return restarea.Errorf(restarea.CodeUnavailable, format, args...).WithRetryAfter(time.Second)
}

// maxUnknownRetries bounds how often a node resends a command whose
// outcome it did not learn before it answers 503 unavailable.
const maxUnknownRetries = 3

// propose commits cmd through raft and returns the state machine's result.
// It waits (bounded by LeaderWait) for a leader and retries when the
// command was certainly not appended (not the leader, a peer that cannot
// be dialed). When the outcome is unknown — leadership lost while waiting,
// a timeout, a forward whose answer was lost — it resends the same command
// a bounded number of times: every command but OpAudit is idempotent (a
// post is matched by request_id, and its attempt id keeps a 201 a 201), so
// this can neither store twice nor change the answer. An OpAudit command
// appends a record each time it applies, so it is not resent: its record
// may be missing (the caller logs it), never doubled. When all that fails
// the answer is 503 unavailable, which a client resolves by retrying with
// the same request_id.
func (n *Node) propose(ctx context.Context, cmd *fsm.Command) (*fsm.Result, error) {
	if err := n.refuseWrites(); err != nil {
		return nil, err // a node that cannot write its disk could not apply it either
	}
	waitCtx, cancel := context.WithTimeout(ctx, n.cfg.LeaderWait)
	defer cancel()
	unknown := 0
	for {
		if err := n.WaitLeader(waitCtx); err != nil {
			return nil, err
		}
		var res *fsm.Result
		var err error
		leaderBefore, _ := n.raft.LeaderWithID()
		if n.IsLeader() {
			res, err = n.applyLocal(ctx, cmd)
		} else {
			res, err = n.forward(ctx, cmd)
		}
		switch {
		case err == nil:
			return res, nil
		case errors.Is(err, errNotApplied):
		case restarea.ErrorCode(err) == restarea.CodeUnavailable && cmd.Op != fsm.OpAudit && unknown < maxUnknownRetries && waitCtx.Err() == nil && ctx.Err() == nil:
			unknown++
			n.log.Debug("write outcome unknown, resending", "op", cmd.Op, "err", err, "retry", unknown)
			// A leader that went silent is usually replaced within an
			// election timeout: resend as soon as another one is known,
			// or after a growing pause to the same one.
			n.waitLeaderChange(waitCtx, string(leaderBefore), 250*time.Millisecond<<(unknown-1))
		default:
			return nil, err
		}
		select {
		case <-waitCtx.Done():
			return nil, unavailable("the cluster did not accept the write in time (leader changing); retry with the same request_id")
		case <-n.stop:
			return nil, unavailable("node is shutting down; retry with the same request_id")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitLeaderChange returns when the leader is no longer from, after max,
// or when ctx ends.
func (n *Node) waitLeaderChange(ctx context.Context, from string, max time.Duration) {
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.stop:
			return
		case <-deadline.C:
			return
		case <-tick.C:
			if a, _ := n.raft.LeaderWithID(); a != "" && string(a) != from {
				return
			}
		}
	}
}

// applyLocal stamps cmd with the leader's clock (as the clock guard lets
// it, stampTime) and a new entry id, and applies it. It must run on the
// leader.
func (n *Node) applyLocal(ctx context.Context, cmd *fsm.Command) (*fsm.Result, error) {
	t, err := n.stampTime(ctx)
	if err != nil {
		return nil, err
	}
	cmd.Time = time.Unix(0, t).UTC().Truncate(time.Millisecond).UnixNano()
	if cmd.Post != nil && cmd.Post.NewID == "" {
		// Time-ordered (version 7) ids make the id index grow at its end,
		// like the log, instead of touching a random page per new entry.
		id, err := uuid.NewV7()
		if err != nil {
			return nil, err
		}
		cmd.Post.NewID = id.String()
	}
	if res := n.refusal(ctx, cmd); res != nil {
		return res, nil // certainly refused: not appended (precheck.go)
	}
	n.pre.noteStamp(cmd.Time)
	data, err := n.encode(cmd)
	if err != nil {
		return nil, err
	}
	timeout := n.cfg.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < timeout {
			timeout = left
		}
	}
	if timeout <= 0 {
		return nil, unavailable("request deadline passed before the write was proposed")
	}
	start := time.Now()
	f := n.raft.Apply(data, timeout)
	err = n.waitFuture(ctx, f, timeout)
	n.met.applyLatency.Observe(time.Since(start).Seconds())
	switch {
	case err == nil:
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrEnqueueTimeout):
		return nil, errNotApplied
	default:
		level := n.faultLevel()
		if errors.Is(err, raft.ErrAbortedByRestore) {
			// An operator's restore (restarea restore) replaced the state
			// under a write of the leader's own start: expected, and the
			// resend settles it.
			level = min(level, slog.LevelInfo)
		}
		n.log.Log(ctx, level, "write outcome unknown", "op", cmd.Op, "err", err)
		return nil, unavailable("the write may or may not have been committed (%v); retry with the same request_id", err)
	}
	res, ok := f.Response().(*fsm.Result)
	if !ok || res == nil {
		return nil, unavailable("the write was committed but its result is unknown; retry with the same request_id")
	}
	n.pre.observe(cmd, res)
	return res, nil
}

// waitFuture waits for an applied command's outcome, at most timeout.
// Raft's own timeout only bounds handing the command to raft; a leader
// that cannot commit (a stalled disk) but keeps its leadership would
// otherwise hold the request forever. Giving up is an unknown outcome,
// which the client resolves by retrying with the same request_id.
func (n *Node) waitFuture(ctx context.Context, f raft.Future, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }() // ends when raft settles the future (at the latest when it shuts down)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errApplyTimeout
	case <-ctx.Done():
		return errApplyTimeout
	case <-n.stop:
		return raft.ErrRaftShutdown
	}
}

// errApplyTimeout: the command was handed to raft, but its outcome did not
// come in time.
var errApplyTimeout = errors.New("no outcome from raft in time")

// forward sends cmd to the leader over the internal channel, batched with
// the other writes waiting on this node (forward.go). The answer
// comes as soon as the leader's result does: this node's own reads wait
// for the index instead (localBarrier), which keeps read-your-writes
// without making the write wait for the leader's next append.
func (n *Node) forward(ctx context.Context, cmd *fsm.Command) (*fsm.Result, error) {
	res, err := n.forwardBatched(ctx, cmd)
	if err != nil {
		return nil, err
	}
	n.acknowledged(res.Index)
	return res, nil
}

// caughtUp reports whether the state machine reflects every log entry up
// to index. Raft's own applied index runs ahead of the state machine (it
// counts entries handed over, not applied), and the state machine never
// sees no-op and barrier entries, so: either the state machine applied
// index itself, or raft handed it over and every entry after the state
// machine's last one is a kind it never sees.
func (n *Node) caughtUp(index uint64) bool {
	applied := n.fsm.AppliedIndex()
	if applied >= index {
		return true
	}
	if n.raft.AppliedIndex() < index {
		return false
	}
	first, err := n.logs.FirstIndex()
	if err != nil {
		return false
	}
	for i := index; i > applied; i-- {
		if i < first {
			return true // covered by a snapshot the state machine holds
		}
		var l raft.Log
		if err := n.logs.GetLog(i, &l); err != nil {
			return false
		}
		if l.Type == raft.LogCommand || l.Type == raft.LogConfiguration {
			return false
		}
	}
	return true
}

// waitApplied blocks until the local state machine reflects index, at
// most ApplyTimeout.
func (n *Node) waitApplied(ctx context.Context, index uint64) error {
	return n.waitIndex(ctx, index, n.cfg.ApplyTimeout, func() error {
		return unavailable("this node has not applied the index the read must reflect in time; retry")
	})
}
