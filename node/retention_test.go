package node_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// clock is a settable clock for the leader's timestamps: a wall clock and
// the monotonic clock a node measures elapsed time by. advance models time
// passing (both move); a step of the wall clock alone is what the clock
// guard refuses to stamp.
type clock struct {
	mu      sync.Mutex
	now     time.Time
	elapsed time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Mono() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.elapsed
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.elapsed += d
	c.mu.Unlock()
}

// withClock makes c the node's wall and monotonic clock.
func withClock(c *clock) testnode.Option {
	return testnode.WithConfig(func(cfg *server.Config) { cfg.Now, cfg.Monotonic = c.Now, c.Mono })
}

// Retention is decided by the leader with its clock and replicated: after
// the retention an entry leaves every read and its request_id is
// forgotten; a deletion's tombstone lasts its own retention.
func TestRetentionWithInjectedClock(t *testing.T) {
	c := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	n := testnode.Start(t, withClock(c), testnode.WithConfig(func(cfg *server.Config) {
		cfg.Retention = 90 * 24 * time.Hour
		cfg.TombstoneRetention = 30 * 24 * time.Hour
	}))
	ctx := context.Background()
	meta := restarea.PostMeta{Source: "192.0.2.5", Channel: restarea.ChannelHTTP}
	old := testkit.Question("How do retries work?")
	oldRes, err := n.Post(ctx, old, meta)
	if err != nil {
		t.Fatal(err)
	}
	deleted := testkit.Question("How do retries work?")
	delRes, err := n.Post(ctx, deleted, meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.DeleteEntry(ctx, delRes.Entry.ID); err != nil {
		t.Fatal(err)
	}

	c.advance(60 * 24 * time.Hour)
	young, err := n.Post(ctx, testkit.Question("How do retries work?"), meta)
	if err != nil {
		t.Fatal(err)
	}
	n.Expire()
	// 60 days on: the tombstone (30d) is gone, the entries (90d) are not.
	if _, err := n.GetThread(ctx, oldRes.Entry.ID, restarea.ReadOptions{}); err != nil {
		t.Fatalf("entry expired too early: %v", err)
	}
	again, err := n.Post(ctx, deleted, meta)
	if err != nil || again.Replayed || again.Entry.ID == delRes.Entry.ID {
		t.Fatalf("after the tombstone expired the request_id should create a new entry: %+v %v", again, err)
	}

	c.advance(31 * 24 * time.Hour)
	n.Expire()
	// 91 days on: the first entry is gone from every read, its request_id
	// forgotten; the younger one stays.
	if _, err := n.GetThread(ctx, oldRes.Entry.ID, restarea.ReadOptions{}); restarea.ErrorCode(err) != restarea.CodeNotFound {
		t.Fatalf("expired entry still readable: %v", err)
	}
	page, _ := n.ListEntries(ctx, restarea.ListOptions{})
	for _, e := range page.Entries {
		if e.ID == oldRes.Entry.ID {
			t.Fatal("expired entry still listed")
		}
	}
	if _, err := n.GetThread(ctx, young.Entry.ID, restarea.ReadOptions{}); err != nil {
		t.Fatalf("young entry expired: %v", err)
	}
	res, err := n.Post(ctx, old, meta)
	if err != nil || res.Replayed || res.Entry.ID == oldRes.Entry.ID {
		t.Fatalf("expired request_id should create a new entry: %+v %v", res, err)
	}
}

// An expiry pass that removes more than a tenth of the store is logged at
// WARN before it runs and counted, whatever the reason; a pass that
// removes a small share is not.
func TestLargeExpiryPassIsCounted(t *testing.T) {
	c := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	n := testnode.Start(t, withClock(c), testnode.WithConfig(func(cfg *server.Config) {
		cfg.Retention = 90 * 24 * time.Hour
	}))
	ctx := context.Background()
	meta := restarea.PostMeta{Source: "192.0.2.5", Channel: restarea.ChannelHTTP}
	post := func(k int) {
		for i := 0; i < k; i++ {
			if _, err := n.Post(ctx, testkit.Question("How do retries work?"), meta); err != nil {
				t.Fatal(err)
			}
		}
	}
	post(60)
	c.advance(10 * 24 * time.Hour)
	post(600)
	// 60 of 660 entries (9 %) are due: no warning.
	c.advance(81 * 24 * time.Hour)
	n.Expire()
	if m := scrape(t, n); !strings.Contains(m, "restarea_expire_large_passes_total 0") {
		t.Fatalf("a pass removing 9%% was counted as large:\n%s", grepLines(m, "restarea_expire"))
	}
	// Another 10 days: the remaining 600 (all of them) are due.
	c.advance(10 * 24 * time.Hour)
	n.Expire()
	if m := scrape(t, n); !strings.Contains(m, "restarea_expire_large_passes_total 1") {
		t.Fatalf("a pass removing the whole store was not counted:\n%s", grepLines(m, "restarea_expire"))
	}
	if got, _ := n.ListEntries(ctx, restarea.ListOptions{}); len(got.Entries) != 0 {
		t.Fatalf("%d entries left after their retention", len(got.Entries))
	}
}
