// Package diskwatch notices when a node cannot write its data directory
// (a full disk, most often): it wraps raft's log and stable stores so that
// a failed write is remembered until a later one succeeds or space visibly
// returns, and so that a failed write of raft's term or vote is retried
// instead of making raft panic. What the node does about it (refuse
// writes, hand leadership over, campaign reluctantly) is node/diskfull.go.
package diskwatch

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/restarea/restarea/fsm"
)

// Stores of the data directory, as metric labels.
const (
	StoreState  = "state"  // state.db, through the FSM
	StoreLog    = "log"    // raft.db: log entries
	StoreStable = "stable" // raft.db: term and vote
)

// Watch remembers the last failed write to the raft log or stable store
// until a later one succeeds (or space visibly returns).
type Watch struct {
	dir         string
	wake        chan struct{}
	failed      atomic.Pointer[Failure]
	logFails    atomic.Uint64
	stableFails atomic.Uint64
}

// Failure is a failed write still in force.
type Failure struct {
	Store string // StoreLog or StoreStable
	Err   error
	At    time.Time
	Free  uint64 // bytes free when it failed (0: unknown)
}

// New returns a watch of the data directory dir.
func New(dir string) *Watch {
	return &Watch{dir: dir, wake: make(chan struct{}, 1)}
}

// Failed returns the failure in force, or nil.
func (w *Watch) Failed() *Failure { return w.failed.Load() }

// Wake receives after a write failed, so that a watcher looks at once.
func (w *Watch) Wake() <-chan struct{} { return w.wake }

// LogFailures and StableFailures count the failed writes of each store.
func (w *Watch) LogFailures() uint64    { return w.logFails.Load() }
func (w *Watch) StableFailures() uint64 { return w.stableFails.Load() }

// note records the outcome of a write to store. Only a success that
// needed space (an append, a term) clears a failure: a compaction that
// deletes entries can succeed on a full disk.
func (w *Watch) note(store string, err error, clears bool) error {
	if err == nil {
		if f := w.failed.Load(); clears && f != nil && f.Store == store {
			w.failed.CompareAndSwap(f, nil)
		}
		return nil
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
	if store == StoreStable {
		w.stableFails.Add(1)
	} else {
		w.logFails.Add(1)
	}
	free, _, _ := Space(w.dir)
	w.failed.Store(&Failure{Store: store, Err: err, At: time.Now(), Free: free})
	return err
}

// SpaceReturned clears a failure once at least 1 MiB more is free than when
// it happened: on an idle cluster no append may come to prove it.
func (w *Watch) SpaceReturned() {
	f := w.failed.Load()
	if f == nil || f.Free == 0 {
		return
	}
	if free, _, err := Space(w.dir); err == nil && free >= f.Free+1<<20 {
		w.failed.CompareAndSwap(f, nil)
	}
}

// LogStore returns store with its write failures noted in w.
func (w *Watch) LogStore(store raft.LogStore) raft.LogStore {
	return watchedLogStore{store, w}
}

type watchedLogStore struct {
	raft.LogStore
	w *Watch
}

func (s watchedLogStore) StoreLog(l *raft.Log) error {
	return s.w.note(StoreLog, s.LogStore.StoreLog(l), true)
}

func (s watchedLogStore) StoreLogs(logs []*raft.Log) error {
	return s.w.note(StoreLog, s.LogStore.StoreLogs(logs), true)
}

func (s watchedLogStore) DeleteRange(min, max uint64) error {
	return s.w.note(StoreLog, s.LogStore.DeleteRange(min, max), false)
}

// StableStore returns store with its failed writes noted in w and retried
// until they succeed or stop is closed. Raft panics when it cannot save
// its term, which on a full disk would be a crash loop; blocking instead
// keeps the node out of elections until it can vote durably.
func (w *Watch) StableStore(store raft.StableStore, log *slog.Logger, stop <-chan struct{}) raft.StableStore {
	return retryingStable{StableStore: store, w: w, log: log, stop: stop}
}

type retryingStable struct {
	raft.StableStore
	w    *Watch
	log  *slog.Logger
	stop <-chan struct{}
}

func (s retryingStable) Set(k, v []byte) error {
	return s.retry(string(k), func() error { return s.StableStore.Set(k, v) })
}

func (s retryingStable) SetUint64(k []byte, v uint64) error {
	return s.retry(string(k), func() error { return s.StableStore.SetUint64(k, v) })
}

func (s retryingStable) retry(key string, write func() error) error {
	pause := 10 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := s.w.note(StoreStable, write(), true)
		if err == nil {
			if attempt > 0 {
				s.log.Info("raft's stable store accepts writes again", "key", key, "attempts", attempt+1)
			}
			return nil
		}
		if attempt == 0 {
			s.log.Error("cannot write raft's term or vote; retrying until it succeeds (this node takes no part in elections meanwhile)",
				"key", key, "err", err, "disk_full", fsm.IsDiskFull(err))
		}
		select {
		case <-s.stop:
			return fmt.Errorf("stopping while raft's %s could not be written: %w", key, err)
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}
