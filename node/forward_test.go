package node

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/cluster"
	"github.com/restarea/restarea/fsm"
)

func TestTakeBatchBounds(t *testing.T) {
	small := func() *forwardCall {
		return &forwardCall{cmd: &fsm.Command{Op: fsm.OpPost, Post: &fsm.PostCommand{Request: restarea.PostRequest{Body: "hi"}}}}
	}
	big := func() *forwardCall {
		return &forwardCall{cmd: &fsm.Command{Op: fsm.OpPost, Post: &fsm.PostCommand{Request: restarea.PostRequest{Body: strings.Repeat("x", 64<<10)}}}}
	}
	var pending []*forwardCall
	for range cluster.MaxBatch + 10 {
		pending = append(pending, small())
	}
	if b := takeBatch(&pending); len(b) != cluster.MaxBatch || len(pending) != 10 {
		t.Fatalf("batch %d, left %d; want %d and 10", len(b), len(pending), cluster.MaxBatch)
	}
	if b := takeBatch(&pending); len(b) != 10 || pending != nil {
		t.Fatalf("batch %d, left %v; want 10 and nothing", len(b), pending)
	}
	if b := takeBatch(&pending); len(b) != 0 {
		t.Fatalf("empty queue gave a batch of %d", len(b))
	}

	for range 8 {
		pending = append(pending, big())
	}
	total := 0
	for len(pending) > 0 {
		b := takeBatch(&pending)
		if len(b) == 0 {
			t.Fatal("no progress on a queue of large posts")
		}
		size := 0
		for _, c := range b {
			size += cluster.CommandSize(c.cmd)
		}
		if len(b) > 1 && size > cluster.MaxBatchBytes {
			t.Fatalf("batch of %d large posts is %d bytes, over %d", len(b), size, cluster.MaxBatchBytes)
		}
		total += len(b)
	}
	if total != 8 {
		t.Fatalf("took %d of 8 large posts", total)
	}
}

func TestPeerRefusedIsUnavailable(t *testing.T) {
	n := &Node{log: slog.New(slog.DiscardHandler)}
	for _, code := range []restarea.Code{restarea.CodeUnauthorized, restarea.CodeForbidden, restarea.CodePayloadTooLarge, restarea.CodeInvalidRequest, restarea.CodeInternal} {
		err := n.peerRefused(restarea.Errorf(code, "refused"))
		var e *restarea.Error
		if !errors.As(err, &e) || e.Code != restarea.CodeUnavailable || e.RetryAfter <= 0 {
			t.Errorf("%s from the leader became %v, want unavailable with a retry delay", code, err)
		}
	}
	keep := []error{nil, errNotApplied, restarea.Errorf(restarea.CodeUnavailable, "no answer")}
	for _, err := range keep {
		if got := n.peerRefused(err); got != err {
			t.Errorf("%v became %v", err, got)
		}
	}
}

func TestForwardQueueDropsAbandonedAndIsBounded(t *testing.T) {
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	call := func(ctx context.Context) *forwardCall {
		return &forwardCall{ctx: ctx, cmd: &fsm.Command{Op: fsm.OpPost}, done: make(chan struct{})}
	}
	live1, dead, live2 := call(context.Background()), call(gone), call(context.Background())
	pending := []*forwardCall{live1, dead, live2}
	dropAbandoned(&pending)
	if len(pending) != 2 || pending[0] != live1 || pending[1] != live2 {
		t.Fatalf("after dropping: %d calls left, want the two live ones in order", len(pending))
	}
	select {
	case <-dead.done:
		if !errors.Is(dead.err, errNotApplied) {
			t.Fatalf("abandoned call: %v, want errNotApplied", dead.err)
		}
	default:
		t.Fatal("abandoned call not finished")
	}

	// Senders busy and the queue full: a new write is refused at once.
	n := &Node{stop: make(chan struct{})}
	n.fwd.senders = forwardSenders
	for range maxForwardPending {
		n.fwd.pending = append(n.fwd.pending, call(context.Background()))
	}
	_, err := n.forwardBatched(context.Background(), &fsm.Command{Op: fsm.OpPost})
	if restarea.ErrorCode(err) != restarea.CodeUnavailable {
		t.Fatalf("write past a full queue: %v, want unavailable", err)
	}
	if len(n.fwd.pending) != maxForwardPending {
		t.Fatalf("queue grew to %d", len(n.fwd.pending))
	}
}
