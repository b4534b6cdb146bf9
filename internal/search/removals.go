package search

import (
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/hashicorp/raft"

	"github.com/restarea/restarea/fsm"
)

// Entries leave the state by delete and expire commands. Queries never
// show them (every hit is checked against the state), but their text
// should not stay in the index either: the indexer reads the applied
// delete and expire commands and removes the documents the state no
// longer holds. Hidden entries stay indexed (unhiding shows them again).

// expireMargin widens the range of documents rechecked after an expire
// command: the state's clock can be ahead of the command's time.
const expireMargin = time.Hour

// sweepPage is how many documents one round of a full sweep checks.
const sweepPage = 1000

// applyRemovals removes the documents of entries that pending delete and
// expire commands removed, and those queries found gone. After an overflow
// (or a failure) it sweeps the whole index instead.
func (x *Index) applyRemovals() error {
	x.pendMu.Lock()
	logs, ids, overflow := x.pending, x.purge, x.overflow
	x.pending, x.purge, x.overflow = nil, nil, false
	x.pendMu.Unlock()

	var cut time.Time
	for _, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		cmd, err := fsm.DecodeCommand(l.Data)
		if err != nil {
			continue // refused by the state machine too: it removed nothing
		}
		switch cmd.Op {
		case fsm.OpDelete:
			ids = append(ids, cmd.EntryID)
		case fsm.OpExpire:
			if cmd.Expire != nil && cmd.Expire.Retention > 0 {
				if c := time.Unix(0, cmd.Time).Add(-cmd.Expire.Retention + expireMargin); c.After(cut) {
					cut = c
				}
			}
		}
	}
	var err error
	switch {
	case overflow:
		err = x.sweep(query.NewMatchAllQuery())
	default:
		if !cut.IsZero() {
			q := bleve.NewDateRangeQuery(time.Time{}, cut)
			q.SetField(fCreated)
			err = x.sweep(q)
		}
		if err == nil && len(ids) > 0 {
			err = x.removeGone(ids)
		}
	}
	if err != nil {
		x.pendMu.Lock()
		x.overflow = true // retried as a full sweep
		x.pendMu.Unlock()
	}
	return err
}

// sweep checks every document q matches against the state and removes
// those it no longer holds.
func (x *Index) sweep(q query.Query) error {
	var after []string
	for {
		var ids []string
		err := x.withIndex(func(idx bleve.Index) error {
			req := bleve.NewSearchRequestOptions(q, sweepPage, 0, false)
			req.SortBy([]string{"_id"})
			if after != nil {
				req.SetSearchAfter(after)
			}
			res, err := idx.Search(req)
			if err != nil {
				return err
			}
			for _, h := range res.Hits {
				ids = append(ids, h.ID)
			}
			return nil
		})
		if err != nil || len(ids) == 0 {
			return err
		}
		if err := x.removeGone(ids); err != nil {
			return err
		}
		if len(ids) < sweepPage {
			return nil
		}
		after = []string{ids[len(ids)-1]}
	}
}

// removeGone deletes the documents of those ids the state no longer holds.
func (x *Index) removeGone(ids []string) error {
	stored, err := x.cfg.State.Stored(ids)
	if err != nil {
		return err
	}
	return x.withIndex(func(idx bleve.Index) error {
		b := idx.NewBatch()
		for _, id := range ids {
			if !stored[id] {
				b.Delete(id)
			}
		}
		if b.Size() == 0 {
			return nil
		}
		n := b.Size()
		if err := idx.Batch(b); err != nil {
			return err
		}
		x.met.removed.Add(float64(n))
		return nil
	})
}

// forget queues ids that a query found gone from the state, for removal.
func (x *Index) forget(ids []string) {
	if len(ids) == 0 {
		return
	}
	x.pendMu.Lock()
	if len(x.purge) < maxPending {
		x.purge = append(x.purge, ids...)
	}
	x.pendMu.Unlock()
	select {
	case x.wake <- struct{}{}:
	default:
	}
}
