package node

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/restarea/restarea"
)

// maxReadWait bounds how long a read waits for this node to apply the
// writes it has acknowledged; past it the read answers 503.
const maxReadWait = 3 * time.Second

// ackBarrier is read-your-writes on a follower. A follower answers a
// forwarded write as soon as the leader's result arrives, before its own
// state machine has applied it (which waits for the leader's next append
// to carry the commit index); instead every read on the node waits until
// the state reflects the highest index it acknowledged. The first read
// after the node starts cannot know what an earlier process acknowledged,
// so it waits for a commit index the leader confirms, once.
type ackBarrier struct {
	acked  atomic.Uint64 // the highest index this node answered a write at
	synced atomic.Bool   // a read has waited for a leader-confirmed index

	mu      sync.Mutex
	applied chan struct{} // closed (and replaced) after every applied batch
}

// appliedSignal returns a channel that is closed after the next batch the
// state machine applies.
func (b *ackBarrier) appliedSignal() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.applied == nil {
		b.applied = make(chan struct{})
	}
	return b.applied
}

// notifyApplied wakes every wait for an applied index.
func (b *ackBarrier) notifyApplied() {
	b.mu.Lock()
	if b.applied != nil {
		close(b.applied)
		b.applied = nil
	}
	b.mu.Unlock()
}

// acknowledged records that this node answered a write committed at
// index.
func (n *Node) acknowledged(index uint64) {
	for {
		cur := n.ack.acked.Load()
		if index <= cur || n.ack.acked.CompareAndSwap(cur, index) {
			return
		}
	}
}

// localBarrier makes a default read see every write this node has
// acknowledged (read-your-writes on the node written to).
//
// A node that cannot write its data directory (a full disk) skips the
// wait and answers from what it applied: the writes it acknowledged just
// before its disk failed are committed on the other nodes but cannot
// reach its state until space is freed, and waiting for them would turn
// "keeps serving reads" into 503s (README, Guarantees: a full disk).
func (n *Node) localBarrier(ctx context.Context) error {
	if n.diskTrouble() != nil {
		return nil
	}
	if !n.ack.synced.Load() {
		// Bounded: a node that never finds a leader (cut off, or not a
		// member) answers 503 instead of holding the read.
		cctx, cancel := context.WithTimeout(ctx, maxReadWait)
		index, err := n.confirmedIndex(cctx)
		cancel()
		if err != nil {
			return unavailable("this node has just started and cannot yet confirm with the leader that its state holds the writes it acknowledged before; retry shortly")
		}
		if err := n.waitIndex(ctx, index, maxReadWait, errNotCaughtUp); err != nil {
			return err
		}
		n.ack.synced.Store(true)
	}
	return n.waitIndex(ctx, n.ack.acked.Load(), maxReadWait, errNotCaughtUp)
}

// confirmedIndex is a commit index confirmed by the leader: every write
// acknowledged anywhere before the call is at or below it. A strong read
// waits for it on every read; a default read once after a start.
func (n *Node) confirmedIndex(ctx context.Context) (uint64, error) {
	if err := n.WaitLeader(ctx); err != nil {
		return 0, err
	}
	if n.IsLeader() {
		index, err := n.leaderReadIndex()
		if err != nil {
			return 0, unavailable("leadership could not be confirmed for a read: %v", err)
		}
		return index, nil
	}
	return n.readIndexFromLeader(ctx)
}

// waitIndex blocks until the local state machine reflects index, at most
// max (then it answers late()).
func (n *Node) waitIndex(ctx context.Context, index uint64, max time.Duration, late func() error) error {
	if n.caughtUp(index) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, max)
	defer cancel()
	// Entries the state machine never sees (no-ops, barriers) end a wait
	// without an applied batch: poll for those, slowly.
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		signal := n.ack.appliedSignal()
		if n.caughtUp(index) {
			return nil
		}
		select {
		case <-signal:
		case <-t.C:
		case <-ctx.Done():
			return late()
		case <-n.stop:
			return unavailable("node is shutting down; retry")
		}
	}
}

// errNotCaughtUp is the answer of a read whose node has not applied what
// it must reflect in time.
func errNotCaughtUp() error {
	return restarea.Errorf(restarea.CodeUnavailable, "this node has not yet applied the writes it acknowledged; retry shortly, or read with consistency=strong").WithRetryAfter(time.Second)
}
