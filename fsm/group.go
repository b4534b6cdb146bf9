package fsm

import (
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// Group commit. Committing the state file costs about the same for one
// entry as for a hundred: every bucket a post touches (records, the
// request_id and id indexes, expiry, threads, the source's limit record,
// meta) has its leaf and branch pages read into memory, rewritten and
// written back on each commit. At low concurrency a raft batch is one
// entry, so that fixed cost was most of what applying an entry cost, on
// every node. So with Options.CommitEvery the applied batches of up to
// that long share one write transaction:
//
//   - A batch's results are returned as soon as it is applied to the open
//     transaction; the node answers the write then, as before.
//   - Every read of the state (view, Snapshot, WriteTo) commits the open
//     transaction first (commitForRead), so a read sees every batch applied before it —
//     what a client was answered is what it reads back. With nothing
//     pending this is one atomic load.
//   - The transaction commits by itself once CommitEvery has passed since
//     it began, or when it holds maxGroupLogs entries, or on Close.
//   - The state file is a cache of the log (durability.go): a process that
//     dies with a transaction open loses it, and raft applies those
//     entries again on the next start (the file's applied index is
//     committed in the same transaction).
//   - A commit that fails (a full disk) rolls everything since the last
//     commit back; the logs of that group are kept and applied again, in
//     the same order onto the same committed state, before anything else,
//     so the state is the one the returned results were decided on. Until
//     a commit succeeds the FSM is Stalled (the node refuses writes) and
//     reads see the last committed state.

// maxGroupLogs bounds the entries of one open transaction (its dirty pages
// are held in memory until it commits).
const maxGroupLogs = 8192

// group is the open write transaction and what it holds.
type group struct {
	tx      *bolt.Tx    // nil when nothing is pending, or after a failed commit
	logs    []*raft.Log // applied since the last commit, in order
	began   time.Time
	armed   bool // a timer will commit the group
	retries int  // failed commits in a row (timer backoff)
}

// grouping reports whether batches share transactions.
func (f *FSM) grouping() bool { return f.opts.CommitEvery > 0 }

// beginGroupLocked opens the write transaction and applies again the logs
// of a group whose commit failed. f.mu (read) and f.gmu are held.
func (f *FSM) beginGroupLocked() error {
	tx, err := f.db.Begin(true)
	if err != nil {
		return err
	}
	if len(f.g.logs) > 0 {
		committed, err := getU64(tx, bMeta, kApplied)
		if err == nil {
			_, err = f.applyLogs(tx, f.g.logs, committed, nil)
		}
		if err != nil {
			tx.Rollback()
			return fmt.Errorf("applying again after a failed commit: %w", err)
		}
	}
	f.g.tx = tx
	f.g.began = time.Now()
	return nil
}

// commitGroupLocked commits what is pending. f.mu (read or write) and
// f.gmu are held. On failure nothing of the group is in the file and its
// logs stay pending.
func (f *FSM) commitGroupLocked() error {
	if len(f.g.logs) == 0 && f.g.tx == nil {
		return nil
	}
	if f.g.tx == nil {
		if err := f.beginGroupLocked(); err != nil {
			return err
		}
	}
	tx := f.g.tx
	f.g.tx = nil
	if err := tx.Commit(); err != nil {
		return err // bbolt rolled it back
	}
	clear(f.g.logs)
	f.g.logs = f.g.logs[:0]
	f.pending.Store(false)
	return nil
}

// commitForRead commits the open group, if any, for a reader. A plain
// read during a stall does not try (the timer does) and sees the last
// committed state; a reader that must see every applied batch (strict: a
// snapshot, a backup) tries and reports the failure. f.mu (read or write)
// is held.
func (f *FSM) commitForRead(strict bool) error {
	if !f.pending.Load() {
		return nil
	}
	f.gmu.Lock()
	defer f.gmu.Unlock()
	if !strict && f.g.retries > 0 {
		return nil
	}
	if err := f.commitGroupLocked(); err != nil {
		f.failedGroup(err)
		return err
	}
	f.groupResumed()
	return nil
}

// Flush commits the batches applied so far to the state file, so that a
// reader of the file (or a copy of it) sees them. Reads through the FSM
// do it themselves.
func (f *FSM) Flush() error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.db == nil {
		return nil
	}
	return f.commitForRead(true)
}

// armLocked makes sure a timer commits the group within d. f.gmu is held.
func (f *FSM) armLocked(d time.Duration) {
	if f.g.armed {
		return
	}
	f.g.armed = true
	time.AfterFunc(d, f.commitLater)
}

// commitLater is the timer's commit of a group nobody else committed.
func (f *FSM) commitLater() {
	f.mu.RLock()
	defer f.mu.RUnlock()
	f.gmu.Lock()
	defer f.gmu.Unlock()
	f.g.armed = false
	if f.db == nil || (len(f.g.logs) == 0 && f.g.tx == nil) {
		return
	}
	if err := f.commitGroupLocked(); err != nil {
		f.failedGroup(err)
		select {
		case <-f.opts.Stop:
			return // stopping: the group is applied again on the next start
		default:
		}
		d := retryMax
		if f.g.retries < 10 {
			d = min(retryFirst<<f.g.retries, retryMax)
		}
		f.armLocked(d)
		return
	}
	f.groupResumed()
}

// failedGroup records a failed group commit (f.gmu held).
func (f *FSM) failedGroup(err error) {
	var first uint64
	if len(f.g.logs) > 0 {
		first = f.g.logs[0].Index
	}
	f.recordFailure(err, first, f.g.retries)
	f.g.retries++
}

// groupResumed clears a stall after a successful group commit (f.gmu held).
func (f *FSM) groupResumed() {
	if f.g.retries > 0 {
		f.g.retries = 0
		f.resumed()
	}
}

// dropGroupLocked discards the open transaction and what is pending: the
// state file is being replaced (Restore) or abandoned (a crash in tests).
// f.mu (write) and f.gmu are held.
func (f *FSM) dropGroupLocked() {
	if f.g.tx != nil {
		f.g.tx.Rollback()
		f.g.tx = nil
	}
	clear(f.g.logs)
	f.g.logs = f.g.logs[:0]
	f.g.retries = 0
	f.pending.Store(false)
}
