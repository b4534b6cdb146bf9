package search

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

func wantCode(t *testing.T, err error, code restarea.Code) {
	t.Helper()
	if restarea.ErrorCode(err) != code || restarea.RetryAfterSeconds(err) < 1 {
		t.Fatalf("got %v (retry after %ds), want %s with a retry delay", err, restarea.RetryAfterSeconds(err), code)
	}
}

// The per-source rate is a token bucket: Count at once, then one per
// Window/Count, with the wait as the retry delay; sources are apart.
func TestGateRate(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := NewGate(GateConfig{Rate: restarea.Limit{Count: 3, WindowSeconds: 30}, Now: func() time.Time { return now }})
	for i := range 3 {
		leave, err := g.Enter(context.Background(), "198.51.100.1")
		if err != nil {
			t.Fatalf("search %d: %v", i, err)
		}
		leave()
	}
	_, err := g.Enter(context.Background(), "198.51.100.1")
	wantCode(t, err, restarea.CodeRateLimited)
	if s := restarea.RetryAfterSeconds(err); s != 10 {
		t.Fatalf("retry after %ds, want 10 (one token per 30s/3)", s)
	}
	leave, err := g.Enter(context.Background(), "198.51.100.2")
	if err != nil {
		t.Fatalf("another source: %v", err)
	}
	leave()
	now = now.Add(10 * time.Second)
	leave, err = g.Enter(context.Background(), "198.51.100.1")
	if err != nil {
		t.Fatalf("after a token came back: %v", err)
	}
	leave()
}

// A source has at most PerSource searches in flight; a node runs
// Concurrency at once, queues four times as many, and refuses the next
// with 503 at once; a freed slot goes to a waiter; a waiter whose client
// left stops waiting.
func TestGateConcurrency(t *testing.T) {
	g := NewGate(GateConfig{Concurrency: 1, PerSource: 1, Rate: restarea.Limit{Count: 1000, WindowSeconds: 1}})
	hold, err := g.Enter(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Enter(context.Background(), "a")
	wantCode(t, err, restarea.CodeRateLimited) // its share is in flight

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type entered struct {
		leave func()
		err   error
	}
	got := make(chan entered, queuePerSlot)
	for i := range queuePerSlot {
		go func() {
			leave, err := g.Enter(ctx, "q"+strconv.Itoa(i))
			got <- entered{leave, err}
		}()
	}
	testkit.Eventually(t, 10*time.Second, "the queue to fill", func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.waiting != queuePerSlot {
			return fmt.Errorf("%d waiting", g.waiting)
		}
		return nil
	})
	_, err = g.Enter(context.Background(), "b")
	wantCode(t, err, restarea.CodeUnavailable) // no slot, queue full

	hold()
	first := <-got
	if first.err != nil {
		t.Fatalf("a waiter did not get the freed slot: %v", first.err)
	}
	cancel()
	for range queuePerSlot - 1 {
		if e := <-got; restarea.ErrorCode(e.err) != restarea.CodeUnavailable {
			t.Fatalf("a waiter whose client left: %v", e.err)
		}
	}
	first.leave()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.inFlight) != 0 || g.waiting != 0 || len(g.slots) != 0 {
		t.Fatalf("left behind: in flight %v, waiting %d, running %d", g.inFlight, g.waiting, len(g.slots))
	}
}

// The rate remembers at most maxSources sources; past it, sources whose
// bucket is full again are forgotten, and new ones share one bucket.
func TestGateSourcesBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := NewGate(GateConfig{Rate: restarea.Limit{Count: 1, WindowSeconds: 3600}, Now: func() time.Time { return now }})
	for i := range maxSources + 10 {
		if leave, err := g.Enter(context.Background(), "s"+strconv.Itoa(i)); err == nil {
			leave()
		}
	}
	if len(g.buckets) > maxSources+1 {
		t.Fatalf("%d buckets, want at most %d", len(g.buckets), maxSources+1)
	}
	_, err := g.Enter(context.Background(), "one more")
	wantCode(t, err, restarea.CodeRateLimited) // the shared bucket is spent
}
