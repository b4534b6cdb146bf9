package node

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/restarea/restarea/transport"
)

// The lineage fence (docs/disasters.md, transport/lineage.go). A node
// shows, in every raft-port handshake, the lineage of its data: the one
// its stable store records. The stable store (raft.db, fsynced on every
// write) holds it rather than the state file alone because the state file
// is committed without fsync and rebuilt after a machine crash: while it
// is being rebuilt it would say "never recovered", and the node would
// take itself for a machine of a lost majority. The state file carries the
// lineage to new members in snapshots; a node adopts the lineage of the
// state it opens or restores when that is not the zero lineage.

// stableKeyLineage is the stable store key of the node's lineage and its
// parent (32 bytes).
var stableKeyLineage = []byte("restarea_lineage")

// staleFile marks a data directory whose node learned that its data is
// stale; the node refuses to start on it until it is wiped.
const staleFile = "STALE"

// ErrStale is returned by Start for a data directory marked stale.
var ErrStale = errors.New("this node's data is stale")

// lineageState is what the node shows in its handshakes.
type lineageState struct {
	ids      atomic.Pointer[[2]transport.Lineage]
	hasState atomic.Bool
	stale    atomic.Bool
}

// readStableLineage returns the lineage the stable store records.
func readStableLineage(s *raftboltdb.BoltStore) ([2]transport.Lineage, error) {
	var l [2]transport.Lineage
	v, err := s.Get(stableKeyLineage)
	if err != nil && !errors.Is(err, raftboltdb.ErrKeyNotFound) {
		return l, err
	}
	if len(v) == 2*transport.LineageSize {
		copy(l[0][:], v)
		copy(l[1][:], v[transport.LineageSize:])
	}
	return l, nil
}

// writeStableLineage records a lineage in the stable store.
func writeStableLineage(s *raftboltdb.BoltStore, l [2]transport.Lineage) error {
	return s.Set(stableKeyLineage, append(append([]byte{}, l[0][:]...), l[1][:]...))
}

// adoptLineage makes the stable store follow the state's lineage when the
// state holds one (opened after recovery, or restored from a recovered
// cluster's snapshot), and loads what the handshakes show.
func (n *Node) adoptLineage() error {
	stable, err := readStableLineage(n.logs)
	if err != nil {
		return fmt.Errorf("lineage: %w", err)
	}
	lin, parent := n.fsm.Lineage()
	state := [2]transport.Lineage{lin, parent}
	if !state[0].IsZero() && state != stable {
		if err := writeStableLineage(n.logs, state); err != nil {
			return fmt.Errorf("lineage: %w", err)
		}
		n.log.Info("lineage: this node's data is of a recovered cluster", "lineage", state[0].String(), "parent", state[1].String())
		stable = state
	}
	n.lin.ids.Store(&stable)
	return nil
}

// identity is what the node shows in a handshake. It reads whether the
// node holds data before which lineage: the state machine stores a
// restored snapshot's lineage before its applied index, so a node seen
// holding data is never seen with the lineage it had before the restore
// (which would make it stale in its new cluster's eyes).
func (n *Node) identity() transport.Identity {
	var id transport.Identity
	id.HasState = n.holdsData()
	if lin, parent := n.fsm.Lineage(); lin != ([transport.LineageSize]byte{}) {
		id.Lineage, id.Parent = lin, parent
	} else if p := n.lin.ids.Load(); p != nil {
		// A state file rebuilt after a machine crash says nothing until it
		// is restored; the stable store says what it held.
		id.Lineage, id.Parent = p[0], p[1]
	}
	return id
}

// holdsData reports whether the node holds any data: once it does, it
// always does (until its directory is wiped). It is not Node.hasState
// (a member of a cluster): a node that has just joined holds nothing
// until the leader's snapshot or first entries arrive.
func (n *Node) holdsData() bool {
	if n.lin.hasState.Load() {
		return true
	}
	if n.fsm.AppliedIndex() > 0 {
		n.lin.hasState.Store(true)
		return true
	}
	if last, err := n.logs.LastIndex(); err != nil || last > 0 {
		// An unreadable log is treated as data: the fence must not
		// wave a node through because its disk failed.
		n.lin.hasState.Store(true)
		return true
	}
	return false
}

// onStale stops a node that a peer proved stale: a machine of a majority
// lost for good, come back with its data after the cluster was recovered.
// Serving, voting or leading with that data could form a second majority
// of the old configuration. The mark keeps it from starting again until
// its data directory is wiped.
func (n *Node) onStale(e *transport.StaleError) {
	if !n.lin.stale.CompareAndSwap(false, true) {
		return
	}
	msg := e.Error()
	if err := writeSynced(filepath.Join(n.cfg.DataDir, staleFile), []byte(msg+"\n"), 0o640); err != nil {
		n.log.Error("lineage: cannot mark the data directory stale", "err", err)
	}
	err := fmt.Errorf("%w: %s", ErrStale, msg)
	n.haltErr.Store(&err)
	n.log.Error("stopping: this node's data is stale", "err", msg, "data_dir", n.cfg.DataDir)
	go func() {
		<-n.started
		if n.startOK {
			n.Close()
		}
	}()
}

// checkStale refuses a data directory marked stale.
func checkStale(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, staleFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	return fmt.Errorf("%w (%s): %s", ErrStale, filepath.Join(dir, staleFile), bytes.TrimSpace(b))
}

// restoredLineage adopts the lineage of a restored snapshot. A failure to
// record it is logged: the handshakes keep showing the previous lineage,
// and the next start tries again from the state file.
func (n *Node) restoredLineage() {
	if err := n.adoptLineage(); err != nil {
		n.log.Error("lineage: cannot record the lineage of a restored snapshot", "err", err)
	}
}

// Lineage is the lineage of the node's data as its handshakes show it, in
// hex ("0" for a cluster never recovered).
func (n *Node) Lineage() string { return n.identity().Lineage.String() }
