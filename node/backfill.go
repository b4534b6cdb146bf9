package node

import (
	"context"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// backfillBatch bounds one OpBackfill: a few milliseconds of applying on
// every node, so posts keep flowing between the commands.
const backfillBatch = 2000

// kickBackfill asks the leader loop to index the entries stored before
// cluster version 4 by their body now, rather than at its next tick.
func (n *Node) kickBackfill() {
	select {
	case n.backfillKick <- struct{}{}:
	default:
	}
}

// backfill proposes OpBackfill commands, as leader, until every entry
// stored before cluster version 4 is indexed by its body, or this node
// stops leading (the next leader goes on from where the state says).
func (n *Node) backfill() {
	if pending, err := n.fsm.BackfillPending(); err != nil || !pending {
		return
	}
	n.log.Info("indexing the entries stored before cluster version 4 by their body (finding a post by its body answers 503 until done)")
	start, total := time.Now(), 0
	// Each result says whether more is left, so the state is read once.
	for n.IsLeader() {
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ApplyTimeout)
		res, err := n.propose(ctx, &fsm.Command{Op: fsm.OpBackfill, Backfill: &fsm.BackfillCommand{MaxItems: backfillBatch}})
		cancel()
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			n.log.Log(context.Background(), n.faultLevel(), "indexing older entries by their body failed; the leader retries at its next tick", "err", err)
			return
		}
		total += res.Backfilled
		if !res.BackfillLeft {
			n.log.Info("indexed the entries stored before cluster version 4 by their body: finding a post by its body works", "entries", total, "took", time.Since(start).Round(time.Millisecond))
			return
		}
	}
}

// FindPosts returns the public entries whose body is exactly q.Body,
// newest first (docs/api.md, finding a post by its body).
func (n *Node) FindPosts(ctx context.Context, q restarea.FindQuery) (restarea.FindPage, error) {
	q, err := q.Validate()
	if err != nil {
		return restarea.FindPage{}, err
	}
	if err := n.readBarrier(ctx, q.Consistency); err != nil {
		return restarea.FindPage{}, err
	}
	p, err := n.fsm.Find(q)
	p.Entries = n.withURLs(p.Entries)
	return p, err
}
