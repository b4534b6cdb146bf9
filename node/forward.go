package node

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/cluster"
	"github.com/restarea/restarea/fsm"
)

// forwardSenders bounds the batches a follower has in flight to the
// leader. Writes that arrive while they are busy queue up and leave
// together in the next batch, so under load one round trip carries many
// commands; with one writer at a time a batch is a single command and
// leaves at once.
const forwardSenders = 4

// forwardQueue gathers commands bound for the leader.
type forwardQueue struct {
	mu      sync.Mutex
	pending []*forwardCall
	senders int
}

type forwardCall struct {
	ctx  context.Context // the caller's: once it ends, nobody waits for the outcome
	cmd  *fsm.Command
	res  *fsm.Result
	err  error
	done chan struct{}
}

// maxForwardPending bounds the writes a follower holds for the leader. A
// leader slower than the load would otherwise let the queue, and the
// follower's memory, grow without end; past it a write is refused at once
// (it was never sent, so nothing was applied) and the client retries.
const maxForwardPending = 4096

// forwardBatched sends cmd to the leader in the next batch and waits for
// its own outcome. A caller that gives up first gets an unknown outcome
// (the command may still be applied; propose's resend is idempotent).
func (n *Node) forwardBatched(ctx context.Context, cmd *fsm.Command) (*fsm.Result, error) {
	c := &forwardCall{ctx: ctx, cmd: cmd, done: make(chan struct{})}
	q := &n.fwd
	q.mu.Lock()
	if len(q.pending) >= maxForwardPending {
		q.mu.Unlock()
		return nil, unavailable("this node has too many writes waiting for the leader; retry with the same request_id")
	}
	q.pending = append(q.pending, c)
	start := q.senders < forwardSenders
	if start {
		q.senders++
	}
	q.mu.Unlock()
	if start {
		go n.sendForwards()
	}
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		return nil, unavailable("no answer from the leader before the request's deadline (outcome unknown); retry with the same request_id")
	case <-n.stop:
		return nil, unavailable("node is shutting down (outcome unknown); retry with the same request_id")
	}
}

// sendForwards sends batches until the queue is empty.
func (n *Node) sendForwards() {
	q := &n.fwd
	for {
		q.mu.Lock()
		dropAbandoned(&q.pending)
		batch := takeBatch(&q.pending)
		if len(batch) == 0 {
			q.senders--
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		n.sendBatch(batch)
	}
}

// dropAbandoned removes the calls whose caller has given up (it already
// answered "outcome unknown"): sending them would spend the leader's time
// and the client's rate limit on work nobody waits for. Never sent, they
// were certainly not applied.
func dropAbandoned(pending *[]*forwardCall) {
	p := *pending
	kept := p[:0]
	for _, c := range p {
		if c.ctx != nil && c.ctx.Err() != nil {
			c.err = errNotApplied
			close(c.done)
			continue
		}
		kept = append(kept, c)
	}
	clear(p[len(kept):])
	*pending = kept
}

// takeBatch removes from the front of *pending what one batch may carry:
// at most cluster.MaxBatch commands and cluster.MaxBatchBytes (always at
// least one command).
func takeBatch(pending *[]*forwardCall) []*forwardCall {
	p := *pending
	size, i := 0, 0
	for ; i < len(p) && i < cluster.MaxBatch; i++ {
		size += cluster.CommandSize(p[i].cmd)
		if i > 0 && size > cluster.MaxBatchBytes {
			break
		}
	}
	batch := p[:i:i]
	*pending = p[i:]
	if len(*pending) == 0 {
		*pending = nil // let the backing array go
	}
	return batch
}

// sendBatch forwards one batch and hands every caller its outcome.
func (n *Node) sendBatch(batch []*forwardCall) {
	// The error is mapped here, once for the whole batch when it failed
	// as a whole (peerRefused logs).
	mapErr := func(err error) error {
		if errors.Is(err, cluster.ErrNotApplied) {
			return errNotApplied
		}
		return n.peerRefused(err)
	}
	finish := func(i int, res *fsm.Result, err error) {
		batch[i].res, batch[i].err = res, err
		close(batch[i].done)
	}
	addr, err := n.leaderAddr()
	if err != nil {
		err = mapErr(err)
		for i := range batch {
			finish(i, nil, err)
		}
		return
	}
	n.met.forwardBatch.Observe(float64(len(batch)))
	ctx, cancel := n.forwardContext(addr)
	defer cancel()
	cmds := make([]*fsm.Command, len(batch))
	for i, c := range batch {
		cmds[i] = c.cmd
	}
	outs, err := n.peers.ApplyBatch(ctx, addr, cmds)
	if errors.Is(err, cluster.ErrNoBatch) {
		// The leader is of an older version: one request per command.
		var wg sync.WaitGroup
		for i, c := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := n.peers.Apply(ctx, addr, c.cmd)
				finish(i, res, mapErr(err))
			}()
		}
		wg.Wait()
		return
	}
	if err != nil {
		err = mapErr(err)
		for i := range batch {
			finish(i, nil, err)
		}
		return
	}
	for i := range batch {
		finish(i, outs[i].Result, mapErr(outs[i].Err))
	}
}

// peerRefused turns the leader's refusal of this node's own internal
// request — a wrong cluster secret, clocks too far apart, a body over the
// internal limit — into 503 unavailable. The client's request is not at
// fault, and a 401 or 413 would tell it the wrong thing.
func (n *Node) peerRefused(err error) error {
	var e *restarea.Error
	if !errors.As(err, &e) || e.Code == restarea.CodeUnavailable {
		return err
	}
	n.log.Error("the leader refused an internal request from this node; check that every node has the same --cluster-secret and a synchronised clock",
		"code", e.Code, "err", e.Message)
	return unavailable("the leader refused this node's internal request (%s: %s); retry with the same request_id", e.Code, e.Message)
}

// forwardContext bounds one forward to the leader at addr: what the leader
// itself would wait for an apply, and a little more for the network. It
// is cancelled at once when this node sees another leader (outcome
// unknown, so propose can resend to the new one) or stops.
func (n *Node) forwardContext(addr string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ApplyTimeout+time.Second)
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-n.stop:
				cancel()
				return
			case <-t.C:
				if a, _ := n.raft.LeaderWithID(); string(a) != addr {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, cancel
}
