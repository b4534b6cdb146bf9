package fsm

import (
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// A batch whose bbolt transaction fails is retried, never skipped: the
// committed log is the record, and a node that left an entry out would
// diverge from the others. bbolt rolls a failed commit back completely —
// the meta page that would name the new tree is the last thing written,
// so a commit that failed before it leaves the previous tree current, and
// the rollback reloads the free list from the file — so the database stays
// usable and the same batch can simply be committed again. Meanwhile the
// apply goroutine blocks (raft queues what commits behind it), readers keep
// the last applied state, and Stalled tells the node why, which refuses
// writes (503) and hands leadership over until space returns.

// Retry pauses grow from retryFirst to retryMax.
const (
	retryFirst = 10 * time.Millisecond
	retryMax   = time.Second
	// stallLogEvery bounds how often a persisting failure is logged again.
	stallLogEvery = 30 * time.Second
)

// Stall describes a batch the state machine cannot commit.
type Stall struct {
	Err      error     // the last commit error
	DiskFull bool      // the file system is out of space or quota
	Since    time.Time // when the first attempt failed
	Attempts int       // failed attempts so far
	Index    uint64    // the first log index of the batch
}

// stallState is kept beside the FSM; see Stalled and FailedCommits.
type stallState struct {
	cur    atomic.Pointer[Stall]
	failed atomic.Uint64
}

// Stalled returns the batch the state machine is retrying, or nil when its
// last commit succeeded.
func (f *FSM) Stalled() *Stall { return f.stall.cur.Load() }

// FailedCommits counts the state-file transactions that failed (each is
// retried) since the FSM was opened.
func (f *FSM) FailedCommits() uint64 { return f.stall.failed.Load() }

// IsDiskFull reports whether err says the file system has no space (or
// quota) left. bbolt returns the write's own error for data pages, but
// formats some (a failed file resize) as text, hence the fallback.
func IsDiskFull(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "no space left on device") || strings.Contains(s, "disk quota exceeded")
}

// failedCommit records a failed attempt at the batch starting at index and
// waits before the next one. It returns false when the node is stopping
// (Options.Stop), in which case the batch is left unapplied: the state
// file's applied index does not move, so the next start applies it.
func (f *FSM) failedCommit(err error, index uint64, attempt int) bool {
	f.gmu.Lock()
	f.recordFailure(err, index, attempt)
	f.gmu.Unlock()
	return f.pause(attempt)
}

// recordFailure counts and logs a failed commit and marks the FSM stalled
// (f.gmu held: it guards stallLogged).
func (f *FSM) recordFailure(err error, index uint64, attempt int) {
	f.stall.failed.Add(1)
	now := time.Now()
	prev := f.stall.cur.Load()
	s := &Stall{Err: err, DiskFull: IsDiskFull(err), Since: now, Attempts: attempt + 1, Index: index}
	if prev != nil {
		s.Since = prev.Since
	}
	f.stall.cur.Store(s)
	switch {
	case attempt == 0:
		f.log.Error("fsm: cannot commit to the state file; retrying the same batch until it succeeds (writes are refused meanwhile)",
			"err", err, "disk_full", s.DiskFull, "index", index)
	case now.Sub(f.stallLogged) >= stallLogEvery:
		f.log.Error("fsm: still cannot commit to the state file", "err", err, "disk_full", s.DiskFull,
			"index", index, "attempts", s.Attempts, "for", now.Sub(s.Since).Round(time.Millisecond).String())
	default:
		return
	}
	f.stallLogged = now
}

func (f *FSM) pause(attempt int) bool {
	d := retryMax
	if attempt < 10 {
		d = min(retryFirst<<attempt, retryMax)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.opts.Stop:
		return false
	case <-t.C:
		return true
	}
}

// resumed clears the stall after a successful commit.
func (f *FSM) resumed() {
	s := f.stall.cur.Swap(nil)
	if s == nil {
		return
	}
	f.log.Info("fsm: the state file accepts commits again; applying resumed",
		"index", s.Index, "attempts", s.Attempts, "stalled_for", time.Since(s.Since).Round(time.Millisecond).String())
}
