package fsm

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/restarea/restarea"
	bolt "go.etcd.io/bbolt"
)

// OpClusterVersion raises the cluster version by exactly one step, to
// Command.ClusterVersion. The leader proposes it only when an operator
// finalizes an upgrade (or --auto-finalize-upgrade) and every member has
// said it knows the target; the state machine itself checks only what it
// can check deterministically: the step is one, and this binary knows the
// target (see UnknownClusterVersionError).
const OpClusterVersion Op = "cluster_version"

// ClusterVersionMax is the newest cluster version this binary knows.
//
// Cluster version 1 is what every release up to and including v0.1.0
// runs (a state file without the key is at 1). Version 2 switches on
// nothing but the mechanism itself — finalizing, and refusing older
// binaries at start and at join once it is in force. Version 3 switches on
// checksums (corrupt.go): every command the leader writes carries the
// CRC-32C of its bytes, and every record the state machine writes carries
// one of its key and value. Version 4 switches on the body fingerprints
// (fingerprint.go): every entry is indexed by its body, those stored
// before by OpBackfill commands. A command or a stored field that an earlier
// release cannot read may only be written once the cluster version says
// every member reads it, so that until an operator finalizes, every node
// can still be restarted on the previous release.
const ClusterVersionMax = 4

var kClusterVersion = []byte("cluster_version")

// UnknownClusterVersionError is what the state machine reports when the
// log raises the cluster version past what this binary knows: it stops
// applying at that entry (nothing of it, nor anything after it, is
// applied), because applying later commands with rules it does not know
// would let this node diverge from the others. Options.OnHalt receives it;
// the node stops. Restarting on a binary that knows the version applies
// the entry and carries on.
type UnknownClusterVersionError struct {
	// Index is the log index of the command that raised the version.
	Index uint64
	// Version is the version the command raises the cluster to; Max is
	// the newest this binary knows.
	Version, Max int
}

func (e *UnknownClusterVersionError) Error() string {
	if e.Index == 0 {
		return fmt.Sprintf("a snapshot of the cluster is at cluster version %d, but this binary knows up to cluster version %d: refused it and stopped applying; run a release that knows cluster version %d",
			e.Version, e.Max, e.Version)
	}
	return fmt.Sprintf("the log raises the cluster version to %d at index %d, but this binary knows up to cluster version %d: stopped applying; run a release that knows cluster version %d",
		e.Version, e.Index, e.Max, e.Version)
}

// applyClusterVersion raises the cluster version to target. A target at or
// below the current version changes nothing (a resent command); a target
// more than one step ahead is refused; a target this binary does not know
// stops the state machine (UnknownClusterVersionError).
func (f *FSM) applyClusterVersion(tx *bolt.Tx, a *auditor, index uint64, target int) (*Result, error) {
	cur, err := readClusterVersion(tx)
	if err != nil {
		return nil, err
	}
	switch {
	case target <= 0:
		return refuse(restarea.CodeInvalidRequest, 0, "cluster version command without a target version"), nil
	case target <= cur:
		return &Result{}, nil
	case target != cur+1:
		return refuse(restarea.CodeInvalidRequest, 0, "the cluster version rises one step at a time: it is %d, the command asks for %d", cur, target), nil
	case target > f.maxClusterVersion():
		return nil, &UnknownClusterVersionError{Index: index, Version: target, Max: f.maxClusterVersion()}
	}
	if err := putU64(tx, bMeta, kClusterVersion, uint64(target)); err != nil {
		return nil, err
	}
	if target == sumFromVersion {
		// Values are sealed from here on; the sources pruning position
		// may hold a bare SHA-256, which could start like a sealed value,
		// so it is dropped (pruning starts again from the first source).
		if err := tx.Bucket(bMeta).Delete(kPruneFrom); err != nil {
			return nil, err
		}
	}
	if target == fingerprintFromVersion {
		if err := startBackfill(tx, index); err != nil {
			return nil, err
		}
	}
	rec, err := a.write(tx, restarea.AuditRecord{
		Action:  restarea.AuditClusterVersion,
		Changes: []restarea.AuditChange{change("cluster_version", cur, target)},
	})
	return &Result{Audit: rec}, err
}

func (f *FSM) maxClusterVersion() int {
	if f.opts.ClusterVersionMax > 0 {
		return f.opts.ClusterVersionMax
	}
	return ClusterVersionMax
}

func readClusterVersion(tx *bolt.Tx) (int, error) {
	v, err := get(tx, bMeta, kClusterVersion)
	if v == nil || err != nil {
		return 1, err
	}
	return int(readU64(v)), nil
}

// ClusterVersion is the cluster version in force, as applied (1 until an
// OpClusterVersion raises it).
func (f *FSM) ClusterVersion() int { return int(f.clusterVersion.Load()) }

// Fresh reports whether the state belongs to a cluster that has never
// been led: no settings were ever applied (every leader, of any release,
// configures its limits first, OpConfigure) and no entry was stored. Only
// a new cluster's first leader, or a leader after it that took over
// before it configured anything, sees a fresh state; a state restored
// from a snapshot or a backup is never fresh. Member records do not count:
// the members of a new cluster announce themselves to its first leader
// while it forms, and may be applied before it looks. Nor does the cluster
// version: a first leader that lost its leadership while raising it
// leaves the next one to go on.
func (f *FSM) Fresh() (bool, error) {
	fresh := false
	err := f.view(func(tx *bolt.Tx) error {
		if tx.Bucket(bMeta).Get(kSettings) != nil {
			return nil
		}
		n, err := getU64(tx, bMeta, kEntries)
		fresh = err == nil && n == 0
		return err
	})
	return fresh, err
}

// Halted returns the error that stopped the state machine, or nil: once
// set, no further entry is applied by this process.
func (f *FSM) Halted() error {
	if e := f.halt.Load(); e != nil {
		return *e
	}
	return nil
}

// halted is the state machine's stop: the first halting error (an
// UnknownClusterVersionError or a CorruptError) is kept and reported once.
func (f *FSM) halted(err error) {
	if !f.halt.CompareAndSwap(nil, &err) {
		return
	}
	if f.opts.OnHalt != nil {
		f.opts.OnHalt(err) // the node logs it, once, as it stops
		return
	}
	f.log.Error("fsm: stopped applying the log", "err", err.Error())
}

// ErrNoStateFile is returned by ReadClusterVersion for a data directory
// without a state file (a node that never started: cluster version 1).
var ErrNoStateFile = errors.New("fsm: no state file")

// ReadClusterVersion reads the cluster version recorded in the state file
// at path without writing anything: the file is opened read-only, so a node
// can refuse to start on a directory its binary does not understand before
// anything opens it for writing. A file that cannot be read as a state
// file (torn by a machine crash, say) returns an error: the caller leaves
// it to Open, which sets such a file aside.
func ReadClusterVersion(path string) (v int, err error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return 1, ErrNoStateFile
	}
	if err := checkStateFile(path); err != nil {
		return 0, err
	}
	defer func() {
		// bbolt panics on some corrupt pages; a file it cannot read is
		// Open's to judge, not this check's.
		if r := recover(); r != nil {
			err = fmt.Errorf("fsm: reading the cluster version of %s: %v", path, r)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second, ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		v, err = readClusterVersion(tx)
		return err
	})
	return v, err
}

// checkRestoredClusterVersion refuses a snapshot whose cluster version this
// binary does not know: installing it would leave the node applying later
// commands by rules it does not have.
func (f *FSM) checkRestoredClusterVersion(path string) error {
	v, err := ReadClusterVersion(path)
	if errors.Is(err, ErrCorrupt) {
		return err // a damaged copy: refused, this node's own file is intact
	}
	if err != nil || v <= f.maxClusterVersion() {
		return nil // checkStateFile already judged the file
	}
	e := &UnknownClusterVersionError{Version: v, Max: f.maxClusterVersion()}
	f.halted(e)
	return e
}
