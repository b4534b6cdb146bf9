package node

import (
	"context"
	"io"
	"path/filepath"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/search"
)

var _ restarea.SearchService = (*Node)(nil)

// openSearch opens the node's own search index, DATA-DIR/search: derived
// from the applied state, never replicated, rebuilt when missing or
// behind (package search).
func (n *Node) openSearch() error {
	var err error
	n.search, err = search.Open(search.Config{
		Dir: filepath.Join(n.cfg.DataDir, "search"), State: n.fsm, Logger: n.log, Registerer: n.reg,
	})
	return err
}

// indexedFSM is the state machine raft drives: the node's FSM, with the
// search index told about every applied batch (without waiting for it)
// and about snapshot restores (after which it rebuilds).
type indexedFSM struct {
	*fsm.FSM
	index *search.Index
	// applied is told after every batch (reads waiting for an index).
	applied func()
}

var _ raft.BatchingFSM = indexedFSM{}

// ApplyBatch applies logs, then hands them to the indexer, which never
// blocks the apply.
func (f indexedFSM) ApplyBatch(logs []*raft.Log) []interface{} {
	out := f.FSM.ApplyBatch(logs)
	f.index.Applied(logs)
	if f.applied != nil {
		f.applied()
	}
	return out
}

// Apply applies one log entry (raft uses ApplyBatch; this keeps the two
// equal).
func (f indexedFSM) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// Restore replaces the state with a snapshot; the index is marked for a
// rebuild first, so that a crash in between still rebuilds it.
func (f indexedFSM) Restore(rc io.ReadCloser) error {
	if err := f.index.Restoring(); err != nil {
		rc.Close()
		return err
	}
	err := f.FSM.Restore(rc)
	f.index.Notify()
	if f.applied != nil {
		f.applied()
	}
	return err
}

// Search runs a full-text search over this node's public entries.
func (n *Node) Search(ctx context.Context, q restarea.SearchQuery) (restarea.SearchPage, error) {
	if err := n.localBarrier(ctx); err != nil {
		return restarea.SearchPage{}, err
	}
	p, err := n.search.Search(ctx, q)
	for i := range p.Results {
		p.Results[i].SetURLs(n.PublicURL())
	}
	return p, err
}
