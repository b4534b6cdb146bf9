package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// stuckFuture is a command raft accepted but never settles: a leader whose
// disk stalls while it keeps its leadership.
type stuckFuture struct {
	raft.ApplyFuture
	settle chan error
}

func (f stuckFuture) Error() error { return <-f.settle }

func TestWaitFutureIsBounded(t *testing.T) {
	n := &Node{stop: make(chan struct{})}
	f := stuckFuture{settle: make(chan error, 1)}
	defer close(f.settle) // let the waiters go

	start := time.Now()
	if err := n.waitFuture(context.Background(), f, 50*time.Millisecond); !errors.Is(err, errApplyTimeout) {
		t.Fatalf("stuck apply: %v, want errApplyTimeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stuck apply held the request %v", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := n.waitFuture(ctx, f, time.Hour); !errors.Is(err, errApplyTimeout) {
		t.Fatalf("cancelled request: %v, want errApplyTimeout", err)
	}

	settled := stuckFuture{settle: make(chan error, 1)}
	settled.settle <- nil
	if err := n.waitFuture(context.Background(), settled, time.Hour); err != nil {
		t.Fatalf("settled apply: %v", err)
	}
}
