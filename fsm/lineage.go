package fsm

import (
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// LineageSize is the length of a lineage id.
const LineageSize = 16

// A cluster recovered from a lost majority (restarea recover) draws a new
// lineage id; the state records it, and the id it was recovered from, so
// that every snapshot carries it to the nodes that join the recovered
// cluster. The node shows it in every raft-port handshake, where the
// machines of the lost majority, still of the old lineage, are refused
// (transport/lineage.go). A state without the key is of the zero lineage:
// every cluster starts there and stays there until it is recovered.
var kLineage = []byte("lineage")

// Lineage returns the lineage of the cluster history this state belongs
// to and the one it was recovered from (both zero for a cluster never
// recovered), as of the last open, restore or SetLineage.
func (f *FSM) Lineage() (lineage, parent [LineageSize]byte) {
	if p := f.lineage.Load(); p != nil {
		return p[0], p[1]
	}
	return
}

// readLineage reads the stored lineage. Its bytes are random, so the
// first byte cannot tell a sealed value from a bare one (sum.go): the
// length does — 32 bytes bare, 37 sealed.
func readLineage(tx *bolt.Tx) (*[2][LineageSize]byte, error) {
	var l [2][LineageSize]byte
	v := tx.Bucket(bMeta).Get(kLineage)
	if len(v) == sumHeader+2*LineageSize {
		if v[0] != sumMarker {
			return nil, &CorruptError{File: stateFile, Where: where(bMeta, kLineage) + ": checksum marker"}
		}
		var err error
		if v, err = unseal(bMeta, kLineage, v); err != nil {
			return nil, err
		}
	}
	if len(v) == 2*LineageSize {
		copy(l[0][:], v)
		copy(l[1][:], v[LineageSize:])
	}
	return &l, nil
}

// SetLineage records a new lineage and its parent, durably. Only recovery
// calls it, on a stopped node's state file, right before the snapshot that
// starts the recovered cluster: a lineage is never changed through the
// log, so the nodes of one lineage never disagree about it.
func (f *FSM) SetLineage(lineage, parent [LineageSize]byte) error {
	if lineage == ([LineageSize]byte{}) {
		return errors.New("fsm: set lineage: the zero lineage is the one of a cluster never recovered")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.db == nil {
		return errNoStateFile
	}
	if err := f.commitForRead(true); err != nil {
		return fmt.Errorf("fsm: set lineage: %w", err)
	}
	v := append(append([]byte{}, lineage[:]...), parent[:]...)
	if err := f.db.Update(func(tx *bolt.Tx) error { return put(tx, bMeta, kLineage, v) }); err != nil {
		return fmt.Errorf("fsm: set lineage: %w", err)
	}
	if f.db.NoSync {
		if err := f.db.Sync(); err != nil {
			return fmt.Errorf("fsm: set lineage: %w", err)
		}
	}
	f.lineage.Store(&[2][LineageSize]byte{lineage, parent})
	return nil
}

// ReadLineage reads the lineage of a state file without opening it for
// writing (restarea recover --inspect).
func ReadLineage(path string) (lineage, parent [LineageSize]byte, err error) {
	if err := checkStateFile(path); err != nil {
		return lineage, parent, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		return lineage, parent, err
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		l, err := readLineage(tx)
		if err != nil {
			return err
		}
		lineage, parent = l[0], l[1]
		return nil
	})
	return lineage, parent, err
}
