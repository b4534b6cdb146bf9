package node_test

import (
	"context"
	"sync"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

func TestPostReplayRead(t *testing.T) {
	n := testnode.Start(t)
	ctx := context.Background()
	meta := restarea.PostMeta{Source: "127.0.0.1", Channel: restarea.ChannelHTTP}
	req := testkit.Question("How do retries work?")
	first, err := n.Post(ctx, req, meta)
	if err != nil || first.Replayed {
		t.Fatalf("first post: %+v, %v", first, err)
	}
	again, err := n.Post(ctx, req, meta)
	if err != nil || !again.Replayed || again.Entry.ID != first.Entry.ID {
		t.Fatalf("replay: %+v, %v", again, err)
	}
	got, err := n.GetThread(ctx, first.Entry.ID, restarea.ReadOptions{Consistency: restarea.ConsistencyStrong})
	if err != nil || got.Title != req.Title || got.RequestID != "" {
		t.Fatalf("read back: %+v, %v", got, err)
	}
	if got.URL != n.URL()+"/threads/"+got.ID {
		t.Fatalf("url %q", got.URL)
	}
}

// 64 goroutines posting the same request at once: one 201, the rest 200
// replayed with the same id, one stored entry.
func TestConcurrentIdenticalPosts(t *testing.T) {
	n := testnode.Start(t)
	req := testkit.Question("How do retries work?")
	const workers = 64
	var wg sync.WaitGroup
	results := make([]restarea.PostResult, workers)
	errs := make([]error, workers)
	start := make(chan struct{})
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = n.Post(context.Background(), req, restarea.PostMeta{Source: "10.0.0.1", Channel: restarea.ChannelHTTP})
		}()
	}
	close(start)
	wg.Wait()
	created := 0
	for i := range workers {
		if errs[i] != nil {
			t.Fatalf("post %d: %v", i, errs[i])
		}
		if !results[i].Replayed {
			created++
		}
		if results[i].Entry.ID != results[0].Entry.ID {
			t.Fatalf("post %d got id %s, want %s", i, results[i].Entry.ID, results[0].Entry.ID)
		}
	}
	if created != 1 {
		t.Fatalf("%d posts answered 201, want exactly 1", created)
	}
	page, err := n.ListEntries(context.Background(), restarea.ListOptions{})
	if err != nil || len(page.Entries) != 1 {
		t.Fatalf("stored entries: %d, %v", len(page.Entries), err)
	}
}
