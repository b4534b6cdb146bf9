package node

import (
	"io"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/search"
)

// raftFSM is what raft drives on every node: for each committed batch, in
// this order,
//
//  1. the replicated state machine decides and stores it (fsm.FSM);
//  2. the node's search index is handed the batch, without waiting for it
//     (internal/search indexes in the background; it is a local view,
//     never replicated);
//  3. reads waiting for an index are woken (ackBarrier, readbarrier.go).
//
// Snapshot restores mark the index for a rebuild first, and the node
// adopts the lineage the snapshot carries after. Wired in open (node.go).
type raftFSM struct {
	*fsm.FSM
	index *search.Index
	// applied is told after every batch (reads waiting for an index).
	applied func()
	// restored is told after a snapshot was restored (the lineage it
	// carries, lineage.go).
	restored func()
}

var _ raft.BatchingFSM = raftFSM{}

// ApplyBatch applies logs, then hands them to the indexer, which never
// blocks the apply, then wakes the reads that wait for them.
func (f raftFSM) ApplyBatch(logs []*raft.Log) []interface{} {
	out := f.FSM.ApplyBatch(logs)
	f.index.Applied(logs)
	if f.applied != nil {
		f.applied()
	}
	return out
}

// Apply applies one log entry (raft uses ApplyBatch; this keeps the two
// equal).
func (f raftFSM) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// Restore replaces the state with a snapshot; the index is marked for a
// rebuild first, so that a crash in between still rebuilds it.
func (f raftFSM) Restore(rc io.ReadCloser) error {
	if err := f.index.Restoring(); err != nil {
		rc.Close()
		return err
	}
	err := f.FSM.Restore(rc)
	if err == nil && f.restored != nil {
		f.restored()
	}
	f.index.Notify()
	if f.applied != nil {
		f.applied()
	}
	return err
}
