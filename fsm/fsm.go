// Package fsm is rest.area's replicated state machine: the command format,
// the decision procedure of docs/contract.md §2, the bbolt schema, snapshots and
// the read queries. Given a state and a command, applying it is
// deterministic, so every node of the cluster reaches the same result.
package fsm

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/restarea/restarea"
	bolt "go.etcd.io/bbolt"
)

// Options tune an FSM.
type Options struct {
	Logger *slog.Logger
	// Observe, when set, is told the size and duration of every applied
	// batch (for metrics).
	Observe func(batch int, d time.Duration)
	// Fault deliberately breaks the state machine, so that tests can show
	// the chaos checker catches a broken build. Never set outside tests.
	Fault Fault
	// InitialMmapSize reserves address space so that growing the file does
	// not remap while a snapshot's read transaction is open (bbolt blocks
	// writers during a remap until readers finish). 0 → 1 GiB.
	InitialMmapSize int
	// Unsynced commits batches without fsync; see durability.go for why
	// that is safe and how a file torn by a machine crash is detected
	// (Rebuilt). Where the system publishes no boot id, commits stay
	// synced.
	Unsynced bool
	// BootID returns the id of the running boot; nil → CurrentBootID.
	// Tests replace it to simulate a machine restart.
	BootID func() string
	// Stop, when closed, ends the retrying of a batch that cannot be
	// committed (diskfull.go), so that raft can shut down; the batch is
	// left unapplied and is applied on the next start.
	Stop <-chan struct{}
	// CommitEvery, when positive, lets the batches applied within that
	// long share one state-file transaction (group.go): reads commit it
	// first, so they still see every applied batch. 0 commits each batch.
	CommitEvery time.Duration
	// BeforeCommit, when set, runs before each state-file transaction of
	// a batch. Tests use it to make the disk look slow; nil in production.
	BeforeCommit func(batch int)
	// ClusterVersionMax is the newest cluster version this state machine
	// applies; 0 → ClusterVersionMax. Tests raise it to play a later
	// release (the node's --test-cluster-version-max).
	ClusterVersionMax int
	// OnHalt, when set, is told once that the state machine stopped
	// applying the log (an UnknownClusterVersionError). It runs on raft's
	// apply goroutine and must not wait for raft (the node stops itself
	// from another goroutine).
	OnHalt func(error)
}

// FSM is the state machine over one bbolt file. It implements
// raft.BatchingFSM. Reads may run concurrently with applies.
type FSM struct {
	path    string
	opts    Options
	log     *slog.Logger
	mu      sync.RWMutex // guards db against the swap in Restore
	db      *bolt.DB
	closed  bool          // Close or Abandon ran (guarded by mu)
	applied atomic.Uint64 // the last index applied, committed or in the open group

	gmu     sync.Mutex  // guards g; taken after mu
	g       group       // batches applied but not committed yet (group.go)
	pending atomic.Bool // g holds applied batches: a read commits them first

	logFormat      atomic.Int32                         // LogFormat, as applied
	clusterVersion atomic.Int32                         // ClusterVersion, as applied
	lineage        atomic.Pointer[[2][LineageSize]byte] // Lineage: the lineage and its parent
	// halt is set when the log raised the cluster version past what this
	// binary knows (clusterversion.go) or met damaged bytes (corrupt.go):
	// nothing more is applied.
	halt  atomic.Pointer[error]
	clock atomic.Int64 // Clock, as applied

	unsynced bool          // commits skip fsync (durability.go)
	rebuilt  bool          // a torn state file was set aside at Open
	stopSync chan struct{} // ends syncLoop; nil when synced
	syncDone chan struct{}

	stall       stallState // a batch that cannot be committed (diskfull.go)
	stallLogged time.Time  // last log line about it (guarded by gmu)
}

var _ raft.BatchingFSM = (*FSM)(nil)

// Open opens (creating if needed) the state file at path.
func Open(path string, opts Options) (*FSM, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.InitialMmapSize == 0 {
		opts.InitialMmapSize = 1 << 30
	}
	if opts.BootID == nil {
		opts.BootID = CurrentBootID
	}
	f := &FSM{path: path, opts: opts, log: opts.Logger}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	unsynced, err := f.checkMarker()
	if err != nil {
		return nil, err
	}
	f.unsynced = unsynced
	if err := f.open(); err != nil {
		return nil, err
	}
	if f.unsynced {
		f.stopSync, f.syncDone = make(chan struct{}), make(chan struct{})
		go f.syncLoop(time.Second, f.stopSync, f.syncDone)
	}
	return f, nil
}

func (f *FSM) open() error {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o750); err != nil {
		return err
	}
	db, err := bolt.Open(f.path, 0o600, &bolt.Options{
		Timeout:         5 * time.Second,
		InitialMmapSize: f.opts.InitialMmapSize,
		FreelistType:    bolt.FreelistMapType,
	})
	if err != nil {
		return fmt.Errorf("fsm: open %s: %w", f.path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		// The lineage before the applied index: a reader that sees the
		// index of a restored snapshot sees its lineage (node/lineage.go).
		l, err := readLineage(tx)
		if err != nil {
			return err
		}
		f.lineage.Store(l)
		m, err := readMetaState(tx)
		if err != nil {
			return err
		}
		f.applied.Store(m.applied)
		f.logFormat.Store(int32(m.format))
		f.clusterVersion.Store(int32(m.version))
		f.clock.Store(m.clock)
		return nil
	})
	if err != nil {
		db.Close()
		return fmt.Errorf("fsm: init %s: %w", f.path, err)
	}
	db.NoSync = f.unsynced
	f.db = db
	return nil
}

// Close makes the state file durable and closes it; an unsynced file is
// then marked clean, so the next Open trusts it after any reboot.
func (f *FSM) Close() error {
	return f.close(true)
}

// Abandon closes the state file the way a crashed process leaves it:
// nothing more is synced and the boot marker is left as it is. Tests use
// it to show what a restart, or a machine restart, then finds.
func (f *FSM) Abandon() error {
	return f.close(false)
}

func (f *FSM) close(clean bool) error {
	if f.stopSync != nil {
		close(f.stopSync)
		<-f.syncDone
		f.stopSync = nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true // ends an ApplyBatch still retrying (it cannot reopen the file)
	if f.db == nil {
		return nil
	}
	var err error
	f.gmu.Lock()
	if clean {
		err = f.commitGroupLocked()
	}
	f.dropGroupLocked() // after a failed commit, or a crash: raft applies them again on the next start
	f.gmu.Unlock()
	if clean && f.unsynced && err == nil {
		err = f.db.Sync()
	}
	if cerr := f.db.Close(); err == nil {
		err = cerr
	}
	f.db = nil
	if clean && f.unsynced && err == nil {
		err = f.writeMarker(markerClean)
	}
	return err
}

// AppliedIndex is the index of the last log entry applied: every read
// through the FSM sees its effects (it commits an open group first). The
// state file records its own applied index in the same transaction as the
// changes, so what a restart finds is consistent: entries at or below the
// file's index are never applied twice, which makes raft's
// NoSnapshotRestoreOnStart safe, and those above it (an open group lost
// with the process) are applied again from the log.
func (f *FSM) AppliedIndex() uint64 { return f.applied.Load() }

// Clock is the state machine's time in Unix nanoseconds: the largest
// command time applied so far (0 before the first command). It never goes
// back, and it is what entries' created_at and expiry are measured by.
func (f *FSM) Clock() int64 { return f.clock.Load() }

// Apply applies one log entry.
func (f *FSM) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies a batch of committed log entries in one bbolt
// transaction, shared with the batches before it when Options.CommitEvery
// allows (group.go). Each command sees the effects of those before it, so
// a duplicate later in the batch matches the earlier one. The last
// applied index is written in the same transaction. A transaction that
// fails (a full disk) is retried until it succeeds, never skipped; see
// diskfull.go. So is opening the state file again after a Restore that
// replaced it but could not open the new one. Once the FSM is closed the
// batch is left unapplied, as when Options.Stop ends the retrying.
//
// Once the log raises the cluster version past what this binary knows,
// nothing more is applied (see UnknownClusterVersionError): the batch and
// every later one are left unapplied, their results nil.
func (f *FSM) ApplyBatch(logs []*raft.Log) []interface{} {
	start := time.Now()
	if f.halt.Load() != nil {
		return make([]interface{}, len(logs))
	}
	for attempt := 0; ; attempt++ {
		if f.opts.BeforeCommit != nil {
			f.opts.BeforeCommit(len(logs))
		}
		out, err := f.applyBatch(logs)
		if errors.Is(err, errNoStateFile) {
			if err = f.reopen(); err == nil {
				out, err = f.applyBatch(logs)
			}
		}
		if errors.Is(err, errClosed) {
			return make([]interface{}, len(logs))
		}
		if err == nil {
			f.resumed()
			if f.opts.Observe != nil {
				f.opts.Observe(len(logs), time.Since(start))
			}
			return out
		}
		var first uint64
		if len(logs) > 0 {
			first = logs[0].Index
		}
		if !f.failedCommit(err, first, attempt) {
			return make([]interface{}, len(logs))
		}
	}
}

// applyBatch is one attempt at ApplyBatch: when it returns an error,
// nothing of this batch stays (bbolt rolled the transaction back) and the
// logs of the open group are still pending (group.go).
func (f *FSM) applyBatch(logs []*raft.Log) ([]interface{}, error) {
	out := make([]interface{}, len(logs))
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.db == nil {
		if f.closed {
			return nil, errClosed
		}
		return nil, errNoStateFile
	}
	f.gmu.Lock()
	defer f.gmu.Unlock()
	applied := f.applied.Load()
	if f.g.tx == nil {
		if err := f.beginGroupLocked(); err != nil {
			return nil, err
		}
	}
	tx := f.g.tx
	last, err := f.applyLogs(tx, logs, applied, out)
	var halt *stoppedAt
	if errors.As(err, &halt) && errors.Is(halt.err, ErrCorrupt) {
		// The command that met damaged bytes may have written part of its
		// effect: nothing of the open transaction is kept. The file stays
		// at its last commit, and the node stops; a restart (after the
		// runbook, on a fresh copy) applies the rest from the log.
		f.haltDroppingGroupLocked(halt.err)
		return make([]interface{}, len(logs)), nil
	}
	if halt != nil {
		// What came before the entry is applied and committed as usual;
		// the entry and what follows it stay out of the group, so a
		// retried commit never meets it.
		err = nil
		logs = logs[:halt.pos]
		clear(out[halt.pos:])
	}
	if err != nil {
		// The state file did not follow the log this time; skipping the
		// batch would let this node diverge from the others, so the caller
		// tries it again.
		tx.Rollback()
		f.g.tx = nil
		return nil, err
	}
	m, err := readMetaState(tx)
	if err != nil {
		// Damaged meta values the batch did not rewrite: a halt like a
		// command's (corrupt.go).
		f.haltDroppingGroupLocked(err)
		return make([]interface{}, len(logs)), nil
	}
	before := len(f.g.logs)
	f.g.logs = append(f.g.logs, logs...)
	// After a failed commit the apply goroutine itself retries, as without
	// groups: raft queues what commits behind it meanwhile.
	if !f.grouping() || f.g.retries > 0 || len(f.g.logs) >= maxGroupLogs || time.Since(f.g.began) >= f.opts.CommitEvery {
		if err := f.commitGroupLocked(); err != nil {
			// Applied again, with its results, by the caller's retry.
			clear(f.g.logs[before:])
			f.g.logs = f.g.logs[:before]
			return nil, err
		}
		f.g.retries = 0
	} else {
		f.pending.Store(true)
		f.armLocked(f.opts.CommitEvery - time.Since(f.g.began))
	}
	f.applied.Store(last)
	f.logFormat.Store(int32(m.format))
	f.clusterVersion.Store(int32(m.version))
	f.clock.Store(m.clock)
	if halt != nil {
		f.halted(halt.err)
	}
	return out, nil
}

// haltDroppingGroupLocked stops the state machine on damaged bytes (a
// CorruptError) met while applying into the open transaction: it is
// rolled back whole, with the batches of the open group, which were
// answered but not committed (raft applies them again on the next start).
// f.gmu is held.
func (f *FSM) haltDroppingGroupLocked(err error) {
	f.g.tx.Rollback()
	f.g.tx = nil
	clear(f.g.logs)
	f.g.logs = f.g.logs[:0]
	f.pending.Store(false)
	f.halted(err)
}

var (
	errClosed      = errors.New("fsm: the state file is closed")
	errNoStateFile = errors.New("fsm: no state file (a snapshot restore failed)")
)

// reopen opens the state file again when a Restore replaced it but could
// not open the new one (on a full disk, its first commit can fail). The
// file in place is the snapshot Restore checked, so applying resumes from
// it: entries at or below its applied index are skipped. A failure is
// retried like a failed commit (the FSM is Stalled, the node refuses
// writes) instead of stopping the process.
func (f *FSM) reopen() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.db != nil {
		return nil
	}
	if f.closed {
		return errClosed
	}
	if err := f.open(); err != nil {
		return fmt.Errorf("%w; opening it again: %w", errNoStateFile, err)
	}
	f.log.Info("fsm: opened the state file a failed snapshot restore left", "applied", f.applied.Load())
	return nil
}

// applyLogs applies the logs after index applied into tx and records the
// last one as the file's applied index; out, when not nil, receives each
// command's result at its log's position. It returns the last index. An
// entry that raises the cluster version past what this binary knows ends
// the batch before it: the entries before it are applied and recorded,
// and the error returned is a *stoppedAt holding the
// *UnknownClusterVersionError. So does a command that meets damaged bytes
// (a *CorruptError, corrupt.go), but its caller keeps nothing of tx.
func (f *FSM) applyLogs(tx *bolt.Tx, logs []*raft.Log, applied uint64, out []interface{}) (uint64, error) {
	last := applied
	var halt error
	for i, l := range logs {
		if l.Index <= applied {
			continue // already in the state file (restart without snapshot restore)
		}
		if l.Type != raft.LogCommand {
			last = l.Index
			continue
		}
		res, err := f.applyCommand(tx, l)
		if halting(err) {
			if c := (*CorruptError)(nil); errors.As(err, &c) && c.Index == 0 {
				c.Index = l.Index
			}
			halt = &stoppedAt{err: err, pos: i}
			break
		}
		if err != nil {
			return applied, fmt.Errorf("index %d: %w", l.Index, err)
		}
		last = l.Index
		if out != nil {
			res.Index = l.Index
			out[i] = res
		}
	}
	if last == applied {
		return last, halt
	}
	if err := putU64(tx, bMeta, kApplied, last); err != nil {
		if halting(err) {
			// The cluster version read to seal the index is damaged: stop
			// like a command that met it (its caller keeps nothing of tx).
			return applied, &stoppedAt{err: err, pos: len(logs)}
		}
		return applied, err
	}
	return last, halt
}

func (f *FSM) applyCommand(tx *bolt.Tx, l *raft.Log) (*Result, error) {
	cmd, err := DecodeCommand(l.Data)
	if errors.Is(err, ErrCorrupt) {
		// Damaged on this node's disk only: the others apply the command,
		// so refusing it here would diverge. applyLogs halts instead.
		return nil, err
	}
	if err != nil {
		// A command this version cannot read is refused the same way on
		// every node running it.
		return refuse(restarea.CodeInternal, 0, "%v", err), nil
	}
	now, err := advanceClock(tx, cmd.Time)
	if err != nil {
		return nil, err
	}
	var a *auditor // nil before log format 3: nothing is audited
	if cmd.Op != OpPost && cmd.Op != OpExpire && cmd.Op != OpBackfill {
		// Posts, expiry and backfills are not operator actions: they skip the read.
		format, err := readLogFormat(tx)
		if err != nil {
			return nil, err
		}
		if format >= 3 {
			a = &auditor{index: l.Index, now: now, source: cmd.Origin}
		}
	}
	switch cmd.Op {
	case OpPost:
		if cmd.Post == nil {
			return refuse(restarea.CodeInvalidRequest, 0, "post command without post"), nil
		}
		// Empty ids would make bbolt refuse the write, and a write error
		// stops every node on this log entry: refuse the command instead.
		if !restarea.ValidUUID(cmd.Post.NewID) || !restarea.ValidUUID(cmd.Post.Request.RequestID) {
			return refuse(restarea.CodeInvalidRequest, 0, "post command without a valid new_id and request_id"), nil
		}
		return f.applyPost(tx, l.Index, now, cmd.Post)
	case OpHide, OpUnhide:
		return applyVisibility(tx, a, cmd.EntryID, cmd.Op == OpUnhide)
	case OpDelete:
		return applyDelete(tx, a, now, cmd.EntryID)
	case OpSettings, OpConfigure:
		if cmd.Settings == nil {
			return refuse(restarea.CodeInvalidRequest, 0, "settings command without settings"), nil
		}
		return applySettings(tx, a, cmd.Settings)
	case OpMember:
		if cmd.Member == nil || cmd.Member.ID == "" {
			return refuse(restarea.CodeInvalidRequest, 0, "member command without member"), nil
		}
		return applyMember(tx, a, cmd.Member)
	case OpEnableLogV2:
		return applyEnableLog(tx, 2)
	case OpEnableLogV3:
		return applyEnableLog(tx, 3)
	case OpClusterVersion:
		return f.applyClusterVersion(tx, a, l.Index, cmd.ClusterVersion)
	case OpAudit:
		if cmd.Audit == nil {
			return refuse(restarea.CodeInvalidRequest, 0, "audit command without audit"), nil
		}
		return applyAudit(tx, a, cmd.Audit)
	case OpExpire:
		if cmd.Expire == nil {
			return refuse(restarea.CodeInvalidRequest, 0, "expire command without parameters"), nil
		}
		return applyExpire(tx, now, cmd.Expire)
	case OpBackfill:
		if cmd.Backfill == nil {
			return refuse(restarea.CodeInvalidRequest, 0, "backfill command without parameters"), nil
		}
		return applyBackfill(tx, cmd.Backfill)
	}
	return refuse(restarea.CodeInternal, 0, "unknown command %q", cmd.Op), nil
}

// advanceClock returns the state machine's time for a command: the leader's
// time, but never earlier than a time already applied, so that a new
// leader with a slower clock cannot make entries older than their
// predecessors.
func advanceClock(tx *bolt.Tx, t int64) (int64, error) {
	last, err := getU64(tx, bMeta, kClock)
	if err != nil {
		return 0, err
	}
	t = max(t, int64(last))
	return t, putU64(tx, bMeta, kClock, uint64(t))
}

// metaState is what the FSM keeps of meta in memory after each batch.
type metaState struct {
	applied         uint64
	format, version int
	clock           int64
}

func readMetaState(tx *bolt.Tx) (m metaState, err error) {
	if m.applied, err = getU64(tx, bMeta, kApplied); err != nil {
		return m, err
	}
	if m.format, err = readLogFormat(tx); err != nil {
		return m, err
	}
	if m.version, err = readClusterVersion(tx); err != nil {
		return m, err
	}
	clock, err := getU64(tx, bMeta, kClock)
	m.clock = int64(clock)
	return m, err
}

// Snapshot captures the state at the current applied index. The read
// transaction it opens is streamed to raft's sink by Persist, so the
// snapshot never holds the database in memory. It holds no lock of the
// FSM: raft keeps a snapshot open while it waits for its main loop, and
// the main loop may be waiting for a Restore on the FSM goroutine (a
// leader's snapshot arriving meanwhile), so Restore must not wait for it;
// the database a snapshot reads is closed once the snapshot is released.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.db == nil {
		return nil, fmt.Errorf("fsm: snapshot: no state file (a snapshot restore failed)")
	}
	if e := f.halt.Load(); e != nil {
		e := *e
		// Raft counts the entries handed over since the stop as applied; a
		// snapshot labelled with their index would lack them.
		return nil, fmt.Errorf("fsm: snapshot: %w", e)
	}
	// Raft records the snapshot at the last index it handed over: the
	// file must hold every applied batch.
	if err := f.commitForRead(true); err != nil {
		return nil, fmt.Errorf("fsm: snapshot: %w", err)
	}
	tx, err := f.db.Begin(false)
	if err != nil {
		return nil, err
	}
	return &snapshot{tx: tx}, nil
}

type snapshot struct {
	tx   *bolt.Tx
	once sync.Once
}

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := s.tx.WriteTo(sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *snapshot) Release() {
	s.once.Do(func() { s.tx.Rollback() })
}

// WriteTo streams a consistent copy of the state file to w (a backup that
// Restore, or `restarea restore`, accepts).
func (f *FSM) WriteTo(w io.Writer) (int64, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.db == nil {
		return 0, fmt.Errorf("fsm: backup: no state file")
	}
	if err := f.commitForRead(true); err != nil {
		return 0, fmt.Errorf("fsm: backup: %w", err)
	}
	var n int64
	err := f.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

// Restore replaces the state with a snapshot stream: it is written to a
// file beside the state file, checked, compacted into a fresh file (a
// snapshot carries its source's free pages and scattered layout; a
// compact file makes later commits write fewer, closer pages), synced,
// and renamed over the state file.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	raw := f.path + ".snapshot"
	tmp := f.path + ".restore"
	defer os.Remove(raw)
	if err := writeFileSync(raw, rc); err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	if err := checkStateFile(raw); err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	if err := f.checkRestoredClusterVersion(raw); err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	if err := compactFile(raw, tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("fsm: restore: compact: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gmu.Lock()
	f.dropGroupLocked() // the snapshot replaces all of it
	f.gmu.Unlock()
	// The new file replaces the old one while the old is still open: a
	// snapshot of it may be streaming (see Snapshot), and the old inode
	// lives on until that ends. No apply or read runs meanwhile (f.mu).
	if err := os.Rename(tmp, f.path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("fsm: restore: %w (the previous state is kept)", err)
	}
	if old := f.db; old != nil {
		// Never leave a closed handle behind: reads would fail on it.
		// Until the new file opens there is no state: reads say so, and
		// the next apply opens it again, retrying as after a failed
		// commit (the FSM is Stalled) until it opens (ApplyBatch).
		f.db = nil
		// bbolt's Close waits for the read transactions still open on it.
		go func() {
			if err := old.Close(); err != nil {
				f.log.Warn("fsm: closing the replaced state file", "err", err)
			}
		}()
	}
	if err := syncDir(filepath.Dir(f.path)); err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	return f.open()
}

func writeFileSync(path string, r io.Reader) error {
	out, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return syncClose(out)
}

// syncClose makes what was written durable, then closes; a file and a
// bbolt database both qualify.
func syncClose(c interface {
	Sync() error
	Close() error
}) error {
	if err := c.Sync(); err != nil {
		c.Close()
		return err
	}
	return c.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// checkStateFile opens a candidate state file and checks it has the
// schema, so a truncated or foreign file is refused before it replaces the
// live one.
func checkStateFile(path string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("not a state file: %w", err)
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		// A truncated stream still has valid meta pages; reading a page past
		// the end of the file would fault (or see zeros), so compare sizes
		// before touching any bucket.
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if fi.Size() < tx.Size() {
			return fmt.Errorf("truncated state file: %d bytes, its pages need %d", fi.Size(), tx.Size())
		}
		if tx.Bucket(bMeta) == nil || tx.Bucket(bEntries) == nil {
			return fmt.Errorf("not a rest.area state file (buckets missing)")
		}
		return nil
	})
}

// CheckStateFile reports whether path holds a readable rest.area state
// file, and its applied index.
func CheckStateFile(path string) (uint64, error) {
	if err := checkStateFile(path); err != nil {
		return 0, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var idx uint64
	err = db.View(func(tx *bolt.Tx) error {
		idx, err = getU64(tx, bMeta, kApplied)
		return err
	})
	return idx, err
}

// compactFile copies the state file at src into a new, dense file at dst
// and syncs it.
func compactFile(src, dst string) error {
	os.Remove(dst)
	in, err := bolt.Open(src, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := bolt.Open(dst, 0o600, &bolt.Options{Timeout: time.Second, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return err
	}
	if err := bolt.Compact(out, in, 64<<20); err != nil {
		out.Close()
		return err
	}
	return syncClose(out)
}
