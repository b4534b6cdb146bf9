// Package search is a node's full-text index of entries: derived from the
// node's applied state, never replicated, rebuilt from the state when it is
// missing or no longer matches it, and fed asynchronously so that writes
// never wait for it. Queries check every hit against the state, so hidden,
// deleted and expired entries never appear, even while the index lags.
package search

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// State is what the index reads of the applied state (*fsm.FSM).
type State interface {
	// EntriesAfter returns stored entries above a sequence number and a
	// watermark (see fsm.FSM.EntriesAfter).
	EntriesAfter(after uint64, limit int) ([]fsm.SeqEntry, uint64, error)
	// PublicEntries returns those of ids that are public now.
	PublicEntries(ids []string) (map[string]restarea.Entry, error)
	// Stored returns those of ids the state still holds.
	Stored(ids []string) (map[string]bool, error)
	// AppliedIndex is the index of the last applied log entry.
	AppliedIndex() uint64
}

// Config configures an Index.
type Config struct {
	// Dir holds the index (DATA-DIR/search).
	Dir   string
	State State
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Registerer, when set, receives the index's metrics.
	Registerer prometheus.Registerer
	// BatchSize is how many entries one index batch holds; 0 → 500.
	BatchSize int
	// Pace is the least time between two index batches once the index
	// has caught up; 0 → DefaultPace, negative → none. Writes that land
	// meanwhile wait for the next batch together (see run).
	Pace time.Duration
	// Damaged, when set, is told each time Open finds a file of the index
	// damaged (a checksum mismatch; the index is then rebuilt).
	Damaged func()
}

// DefaultPace spaces index batches by a second. A bleve batch costs a new
// segment, its files, a sync and later merges whatever it holds: one per
// applied raft batch (one post, at low load) spent more CPU than the
// whole write path. A query that finds the index behind the state it saw
// cuts the pause short (hurry), so searching never waits for the pace.
const DefaultPace = time.Second

// Internal keys stored in the index itself, so that they are exactly as
// durable as the documents they describe.
var (
	kWatermark = []byte("restarea_watermark") // every stored entry with seq ≤ it is indexed
	kVersion   = []byte("restarea_mapping")
)

// rebuildMarker is a file beside the index that says the state it was
// derived from was replaced (a snapshot restore): it is written before the
// state changes and removed once the index is reset, so a crash in between
// still leads to a rebuild.
const rebuildMarker = "REBUILD"

// Index is the full-text index of one node.
type Index struct {
	cfg  Config
	log  *slog.Logger
	path string // the bleve index directory
	met  *metrics

	mu  sync.RWMutex // guards idx against the swap of a reset
	idx bleve.Index

	watermark  atomic.Uint64
	unwritten  atomic.Bool  // a batch since the last flush (Close waits for it to be written)
	rebuilding atomic.Bool  // the index was reset and has not caught up yet
	reset      atomic.Bool  // a reset was asked for (snapshot restore)
	since      atomic.Int64 // unix nanos of the oldest notification not yet indexed

	pendMu   sync.Mutex
	pending  []*raft.Log // applied logs whose deletions and expiries are to be applied here
	purge    []string    // ids queries found gone from the state
	overflow bool        // too many pending logs were dropped: sweep everything

	progressMu sync.Mutex
	progress   chan struct{} // closed (and replaced) whenever the watermark moves

	wake  chan struct{}
	hurry chan struct{} // a query waits for the index: end the pace now
	stop  chan struct{}
	done  chan struct{}
}

// maxPending bounds the applied logs waiting for the indexer; past it they
// are dropped and a full sweep removes whatever they deleted.
const maxPending = 1 << 16

// Open opens the index in cfg.Dir, creating or rebuilding it as needed,
// and starts following the state. Close stops it.
func Open(cfg Config) (*Index, error) {
	if cfg.State == nil {
		return nil, errors.New("search: no state")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 500
	}
	if cfg.Pace == 0 {
		cfg.Pace = DefaultPace
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	x := &Index{
		cfg: cfg, log: cfg.Logger.With("component", "search"), path: filepath.Join(cfg.Dir, "index"),
		progress: make(chan struct{}), wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	if err := x.openIndex(); err != nil {
		return nil, err
	}
	x.met = newMetrics(cfg.Registerer, x)
	go x.run()
	x.Notify()
	return x, nil
}

// openIndex opens the bleve index, or builds an empty one when it is
// missing, unreadable, of another mapping version, marked for rebuild, or
// ahead of the state (a state file replaced behind its back).
func (x *Index) openIndex() error {
	_, markErr := os.Stat(filepath.Join(x.cfg.Dir, rebuildMarker))
	// root.bolt is checked before scorch opens it (verify.go).
	damage := verifyRoot(x.path)
	var idx bleve.Index
	err := damage
	if damage == nil {
		idx, err = openChecked(x.path)
	}
	reason := ""
	switch {
	case damage != nil:
		reason = "damaged"
	case errors.Is(err, bleve.ErrorIndexPathDoesNotExist):
		reason = "missing"
	case err != nil:
		reason = "unreadable: " + err.Error()
	case markErr == nil:
		reason = "the state was replaced (snapshot restore)"
	}
	if err == nil && reason == "" {
		v, _ := idx.GetInternal(kVersion)
		w, werr := idx.GetInternal(kWatermark)
		switch {
		case string(v) != mappingVersion:
			reason = "built with another mapping"
		case werr != nil || len(w) != 8:
			reason = "no watermark"
		case binary.BigEndian.Uint64(w) > x.cfg.State.AppliedIndex():
			reason = "ahead of the state"
		default:
			// Each segment file against its CRC: a read of the whole
			// index, once per start (verify.go).
			if damage = verifySegments(idx, x.path); damage == nil {
				x.idx = idx
				x.watermark.Store(binary.BigEndian.Uint64(w))
				x.log.Info("search index opened", "watermark", x.watermark.Load(), "applied", x.cfg.State.AppliedIndex())
				return nil
			}
			reason = "damaged"
		}
	}
	if err == nil {
		idx.Close()
	}
	if damage != nil {
		var d *damagedFile
		if !errors.As(damage, &d) {
			// The check itself failed (a segment that cannot be read):
			// the index cannot be trusted either way.
			reason = "unreadable: " + damage.Error()
		} else {
			x.log.Warn("search index damaged (checksum mismatch): rebuilding it from the state; searches answer 503 until then",
				"file", filepath.ToSlash(filepath.Join(x.path, d.file)), "err", d.Error())
			if x.cfg.Damaged != nil {
				x.cfg.Damaged()
			}
		}
	}
	x.log.Info("search index rebuilding from the state", "reason", reason)
	return x.create()
}

// storeConfig is scorch's configuration. A batch is searchable once
// introduced; by default scorch also writes and syncs it as a segment of
// its own before Batch returns, and later merges those files, which per
// small batch cost more CPU than the write path did. Unsafe batches return
// once introduced, and the persister naps between writes so that the
// batches of that time are merged in memory and written as one segment. A
// crash loses what was not written yet: the watermark is in the same
// batches as the documents, so the index reopens at an older watermark and
// catches up from the state.
func storeConfig() map[string]interface{} {
	cfg := segmentConfig()
	cfg["unsafe_batch"] = true
	cfg["scorchPersisterOptions"] = map[string]interface{}{
		"PersisterNapTimeMSec": persistNap.Milliseconds(),
	}
	return cfg
}

// persistNap is how long scorch's persister waits between writes; Close
// waits for the last write, at most flushWait.
const (
	persistNap = time.Second
	flushWait  = 5 * time.Second
)

// create replaces the index directory with an empty index at watermark 0.
func (x *Index) create() error {
	if err := os.RemoveAll(x.path); err != nil {
		return fmt.Errorf("search: remove %s: %w", x.path, err)
	}
	idx, err := bleve.NewUsing(x.path, newMapping(), scorch.Name, scorch.Name, storeConfig())
	if err != nil {
		return fmt.Errorf("search: create %s: %w", x.path, err)
	}
	b := idx.NewBatch()
	b.SetInternal(kVersion, []byte(mappingVersion))
	b.SetInternal(kWatermark, u64(0))
	if err := idx.Batch(b); err != nil {
		idx.Close()
		return fmt.Errorf("search: init %s: %w", x.path, err)
	}
	if err := os.Remove(filepath.Join(x.cfg.Dir, rebuildMarker)); err != nil && !errors.Is(err, os.ErrNotExist) {
		idx.Close()
		return fmt.Errorf("search: %w", err)
	}
	x.idx = idx
	x.watermark.Store(0)
	x.rebuilding.Store(true)
	return nil
}

// Notify tells the indexer that the state moved. It never blocks.
func (x *Index) Notify() {
	x.since.CompareAndSwap(0, time.Now().UnixNano())
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// Applied tells the indexer which logs were just applied, so that it
// removes what they deleted or expired. It never blocks: the logs are
// kept for the indexer's goroutine (raft does not change them after
// applying), and past maxPending they are dropped for a full sweep.
func (x *Index) Applied(logs []*raft.Log) {
	x.pendMu.Lock()
	if len(x.pending)+len(logs) > maxPending {
		x.pending, x.overflow = nil, true
	} else if !x.overflow {
		x.pending = append(x.pending, logs...)
	}
	x.pendMu.Unlock()
	x.Notify()
}

// Restoring is called before the state is replaced by a snapshot: the
// index will then be rebuilt. The marker file is synced first, so the
// rebuild happens even if the process dies right after the restore.
func (x *Index) Restoring() error {
	x.reset.Store(true)
	return MarkForRebuild(x.cfg.Dir)
}

// MarkForRebuild makes the index in dir rebuild itself from the state on
// its next Open, as after a snapshot restore: for tools that replace a
// stopped node's state (node.Recover). A directory that does not exist
// yet has nothing to rebuild.
func MarkForRebuild(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(dir, rebuildMarker), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("search: rebuild marker: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("search: rebuild marker: %w", err)
	}
	return f.Close()
}

// Close stops the indexer and closes the index.
func (x *Index) Close() error {
	select {
	case <-x.stop:
	default:
		close(x.stop)
	}
	<-x.done
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.idx == nil {
		return nil
	}
	x.flush()
	err := x.idx.Close()
	x.idx = nil
	x.met.unregister()
	return err
}

// flush waits until what was indexed is written (batches are unsafe, see
// storeConfig), so that a reopened index resumes where this one stopped.
// A failure only costs the next Open some re-indexing.
func (x *Index) flush() {
	if !x.unwritten.Swap(false) {
		return
	}
	done := make(chan error, 1)
	b := x.idx.NewBatch()
	b.SetInternal(kWatermark, u64(x.watermark.Load()))
	b.SetPersistedCallback(func(err error) { done <- err })
	if err := x.idx.Batch(b); err != nil {
		x.log.Warn("search: writing the index before closing", "err", err)
		return
	}
	select {
	case err := <-done:
		if err != nil {
			x.log.Warn("search: writing the index before closing", "err", err)
		}
	case <-time.After(flushWait):
		x.log.Warn("search: the index was not written in time before closing; the next start re-indexes the latest entries")
	}
}

// Watermark is the position indexed so far: every entry the state stored
// at or below this log index is in the index.
func (x *Index) Watermark() uint64 { return x.watermark.Load() }

// Rebuilding reports whether the index is being rebuilt from the state.
// It is true from Restoring on.
func (x *Index) Rebuilding() bool { return x.rebuilding.Load() || x.reset.Load() }

// run follows the state until Close. Once caught up, it waits for a
// wake-up and then until cfg.Pace has passed since its last round, so
// that the posts of that time are indexed in one batch — or until a query
// is waiting for them (hurry).
func (x *Index) run() {
	defer close(x.done)
	backoff := 100 * time.Millisecond
	var last time.Time
	for {
		last = time.Now()
		caughtUp, err := x.safeStep()
		if err != nil {
			x.log.Warn("search indexing failed; retrying", "err", err, "retry_in", backoff)
			select {
			case <-x.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 10*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if !caughtUp {
			select {
			case <-x.stop:
				return
			default:
				continue
			}
		}
		select {
		case <-x.stop:
			return
		case <-x.wake:
		}
		if wait := x.cfg.Pace - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-x.stop:
				t.Stop()
				return
			case <-t.C:
			case <-x.hurry:
				t.Stop()
			}
		}
	}
}

// step does one round of work and reports whether the index has caught up
// with the state.
func (x *Index) step() (bool, error) {
	if x.reset.Load() {
		// Rebuilding before reset is cleared: Rebuilding never reads false
		// in between, while the old watermark is still in place.
		x.rebuilding.Store(true)
		x.reset.Store(false)
		if err := x.resetIndex(); err != nil {
			x.reset.Store(true)
			return false, err
		}
	}
	if err := x.applyRemovals(); err != nil {
		return false, err
	}
	since := x.since.Swap(0)
	before := x.watermark.Load()
	entries, mark, err := x.cfg.State.EntriesAfter(before, x.cfg.BatchSize)
	if err != nil {
		x.since.CompareAndSwap(0, since)
		return false, err
	}
	caughtUp := len(entries) < x.cfg.BatchSize
	if len(entries) > 0 || mark != before {
		err := x.withIndex(func(idx bleve.Index) error {
			b := idx.NewBatch()
			for _, e := range entries {
				if err := b.Index(e.ID, document(e.Entry)); err != nil {
					return fmt.Errorf("search: index %s: %w", e.ID, err)
				}
			}
			b.SetInternal(kWatermark, u64(mark))
			if err := idx.Batch(b); err != nil {
				return fmt.Errorf("search: batch: %w", err)
			}
			return nil
		})
		if err != nil {
			x.since.CompareAndSwap(0, since)
			return false, err
		}
		x.met.indexed.Add(float64(len(entries)))
		x.unwritten.Store(true)
		x.advance(mark)
	}
	if !caughtUp {
		x.since.CompareAndSwap(0, since)
		return false, nil
	}
	if since != 0 {
		x.met.delay.Observe(time.Since(time.Unix(0, since)).Seconds())
	}
	if x.rebuilding.Swap(false) {
		n, _ := x.docCount()
		x.log.Info("search index rebuilt", "docs", n, "watermark", mark)
	}
	return true, nil
}

// advance publishes a new watermark and wakes queries waiting for it.
func (x *Index) advance(mark uint64) {
	x.watermark.Store(mark)
	x.progressMu.Lock()
	close(x.progress)
	x.progress = make(chan struct{})
	x.progressMu.Unlock()
}

// resetIndex drops the index and starts it over from the state.
func (x *Index) resetIndex() error {
	x.pendMu.Lock()
	x.pending, x.purge, x.overflow = nil, nil, false
	x.pendMu.Unlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.idx != nil {
		if err := closeQuietly(x.idx.Close); err != nil {
			x.log.Warn("search: closing the index before a rebuild", "err", err)
		}
		x.idx = nil
	}
	x.log.Info("search index rebuilding from the state", "reason", "the state was replaced (snapshot restore), or the index broke")
	if err := x.create(); err != nil {
		return err
	}
	x.advance(0)
	return nil
}

// withIndex runs fn on the open index; the index is not swapped or
// closed meanwhile.
func (x *Index) withIndex(fn func(bleve.Index) error) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.idx == nil {
		return errClosed
	}
	return fn(x.idx)
}

var errClosed = errors.New("search: index closed")

func (x *Index) docCount() (n uint64, err error) {
	err = x.withIndex(func(idx bleve.Index) error {
		n, err = idx.DocCount()
		return err
	})
	return n, err
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}
