package client_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/client"
	"github.com/restarea/restarea/client/clienttest"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// TestListThreads pages the public questions through a fault proxy: one
// page at a time by cursor, and all pages by Threads, newest first, with
// every consistency.
func TestListThreads(t *testing.T) {
	n := testnode.Start(t)
	ctx := context.Background()
	var want []string // newest first
	for i := range 5 {
		want = slices.Insert(want, 0, seed(t, n, testkit.Question(fmt.Sprintf("thread %d", i))).ID)
	}
	hidden := seed(t, n, testkit.Question("hidden"))
	if _, err := n.HideEntry(ctx, hidden.ID); err != nil {
		t.Fatal(err)
	}
	p := clienttest.New(t, n.URL())
	p.ScriptReads(clienttest.CutBody, clienttest.DropAnswer, clienttest.Unavailable)
	c, _ := newClient(t, []string{p.URL()})

	// One page at a time, following next_cursor by hand.
	var ids []string
	opts := restarea.ListOptions{Limit: 2, Consistency: restarea.ConsistencyStrong}
	for pages := 1; ; pages++ {
		page, err := c.ListThreads(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Threads {
			if e.Type != restarea.TypeQuestion || e.URL == "" || e.RequestID != "" {
				t.Fatalf("thread %+v", e)
			}
			ids = append(ids, e.ID)
		}
		if page.NextCursor == nil {
			if pages != 3 {
				t.Fatalf("%d pages, want 3", pages)
			}
			break
		}
		opts.Cursor = *page.NextCursor
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("ListThreads: %v, want %v", ids, want)
	}

	for _, cons := range []restarea.Consistency{restarea.ConsistencyLocal, restarea.ConsistencyStrong, restarea.ConsistencyStale} {
		t.Run("Threads "+string(cons), func(t *testing.T) {
			var ids []string
			pages := 0
			for page, err := range c.Threads(ctx, restarea.ListOptions{Limit: 3, Consistency: cons}) {
				if err != nil {
					t.Fatal(err)
				}
				pages++
				for _, e := range page.Threads {
					ids = append(ids, e.ID)
				}
			}
			if !slices.Equal(ids, want) || pages != 2 {
				t.Fatalf("%d pages %v, want 2 pages %v", pages, ids, want)
			}
		})
	}

	// Starting from a cursor continues there.
	first, err := c.ListThreads(ctx, restarea.ListOptions{Limit: 4})
	if err != nil || first.NextCursor == nil {
		t.Fatalf("first page: %+v, %v", first, err)
	}
	var rest []string
	for page, err := range c.Threads(ctx, restarea.ListOptions{Cursor: *first.NextCursor}) {
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Threads {
			rest = append(rest, e.ID)
		}
	}
	if !slices.Equal(rest, want[4:]) {
		t.Fatalf("from the cursor: %v, want %v", rest, want[4:])
	}
}

// TestListReplies reads one page of replies at a time by cursor.
func TestListReplies(t *testing.T) {
	n := testnode.Start(t)
	ctx := context.Background()
	q := seed(t, n, testkit.Question("replied"))
	var want []string
	for i := range 3 {
		want = append(want, seed(t, n, testkit.Reply(q.ID, fmt.Sprintf("reply %d", i))).ID)
	}
	c, _ := newClient(t, []string{n.URL()})
	var ids []string
	opts := restarea.ListOptions{Limit: 2, Consistency: restarea.ConsistencyStale}
	for {
		page, err := c.ListReplies(ctx, q.ID, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Replies {
			ids = append(ids, e.ID)
		}
		if page.NextCursor == nil {
			break
		}
		opts.Cursor = *page.NextCursor
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("replies %v, want %v", ids, want)
	}
	if _, err := c.ListReplies(ctx, client.NewRequestID(), restarea.ListOptions{}); restarea.ErrorCode(err) != restarea.CodeNotFound {
		t.Fatalf("missing question: %v, want not_found", err)
	}
}

// TestSearch searches a real node's index: ranking, filters, paging by
// cursor and by SearchPages.
func TestSearch(t *testing.T) {
	n := testnode.Start(t)
	ctx := context.Background()
	mk := func(title, body, actor string) restarea.PostRequest {
		q := testkit.Question(title)
		q.Body, q.Actor = body, restarea.Actor{Name: actor}
		return q
	}
	retry := seed(t, n, mk("Retrying a post", "After a timeout, retry the post with the same request_id.", "searcher"))
	other := seed(t, n, mk("Timeout settings", "Which timeout does the client use for a post?", "other"))
	seed(t, n, mk("Caching", "Unrelated text about caches.", "other"))
	reply := seed(t, n, testkit.Reply(retry.ID, "A timeout is no proof that the post was lost."))
	c, _ := newClient(t, []string{n.URL()})

	// The index follows the state asynchronously; a query waits a second
	// for it, which a busy machine may exceed.
	page := testkit.EventuallyValue(t, 20*time.Second, "the index to hold the entries", func() (restarea.SearchPage, error) {
		p, err := c.Search(ctx, restarea.SearchQuery{Q: "  timeout post  "})
		if err == nil && len(p.Results) != 3 {
			err = fmt.Errorf("%d results", len(p.Results))
		}
		return p, err
	})
	for _, r := range page.Results {
		if r.Score <= 0 || r.Snippet == "" || r.URL == "" || r.RequestID != "" {
			t.Fatalf("result %+v", r)
		}
	}

	cases := []struct {
		name string
		q    restarea.SearchQuery
		want []string
	}{
		{"replies only", restarea.SearchQuery{Q: "timeout", Type: restarea.TypeReply}, []string{reply.ID}},
		{"one actor", restarea.SearchQuery{Q: "timeout", Actor: "other"}, []string{other.ID}},
		{"since the future", restarea.SearchQuery{Q: "timeout", Since: time.Now().Add(time.Hour)}, nil},
		{"no match", restarea.SearchQuery{Q: "zebra"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := c.Search(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range p.Results {
				ids = append(ids, r.ID)
			}
			if !slices.Equal(ids, tc.want) || p.NextCursor != nil {
				t.Fatalf("%v (next %v), want %v", ids, p.NextCursor, tc.want)
			}
		})
	}

	// One result per page: by cursor, and by SearchPages, in the order of
	// the single page.
	var all []string
	for _, r := range page.Results {
		all = append(all, r.ID)
	}
	var byCursor []string
	q := restarea.SearchQuery{Q: "timeout post", Limit: 1}
	for range 10 {
		p, err := c.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Results {
			byCursor = append(byCursor, r.ID)
		}
		if p.NextCursor == nil {
			break
		}
		q.Cursor = *p.NextCursor
	}
	var byPages []string
	for p, err := range c.SearchPages(ctx, restarea.SearchQuery{Q: "timeout post", Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Results {
			byPages = append(byPages, r.ID)
		}
	}
	if !slices.Equal(byCursor, all) || !slices.Equal(byPages, all) {
		t.Fatalf("by cursor %v, by SearchPages %v, want %v", byCursor, byPages, all)
	}
}

// TestBadReadOptions: options the REST API does not take are refused by
// name before anything is sent; what only the server can judge comes back
// as its invalid_request.
func TestBadReadOptions(t *testing.T) {
	n := testnode.Start(t)
	ctx := context.Background()
	p := clienttest.New(t, n.URL())
	var sent atomic.Int32
	p.OnRequest(func(*http.Request) { sent.Add(1) })
	c, _ := newClient(t, []string{p.URL()})
	id := client.NewRequestID()

	local := []struct {
		name string
		call func() error
	}{
		{"limit above the maximum", func() error {
			_, err := c.ListThreads(ctx, restarea.ListOptions{Limit: restarea.MaxPageLimit + 1})
			return err
		}},
		{"negative limit", func() error { _, err := c.ListReplies(ctx, id, restarea.ListOptions{Limit: -1}); return err }},
		{"newest first", func() error {
			_, err := c.ListThreads(ctx, restarea.ListOptions{NewestFirst: true})
			return err
		}},
		{"unknown consistency", func() error {
			_, err := c.Thread(ctx, id, restarea.ReadOptions{Consistency: "eventual"})
			return err
		}},
		{"iterator", func() error {
			for _, err := range c.Threads(ctx, restarea.ListOptions{Consistency: "eventual"}) {
				return err
			}
			return nil
		}},
		{"empty query", func() error { _, err := c.Search(ctx, restarea.SearchQuery{Q: "   "}); return err }},
		{"search limit", func() error {
			_, err := c.Search(ctx, restarea.SearchQuery{Q: "x", Limit: restarea.MaxSearchLimit + 1})
			return err
		}},
		{"search type", func() error { _, err := c.Search(ctx, restarea.SearchQuery{Q: "x", Type: "answer"}); return err }},
	}
	for _, tc := range local {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); restarea.ErrorCode(err) != restarea.CodeInvalidRequest {
				t.Fatalf("%v, want invalid_request", err)
			}
		})
	}
	if got := sent.Load(); got != 0 {
		t.Fatalf("%d requests sent for options refused locally", got)
	}

	// A cursor is opaque to the client: the server refuses a bad one.
	if _, err := c.ListThreads(ctx, restarea.ListOptions{Cursor: "not-a-cursor"}); restarea.ErrorCode(err) != restarea.CodeInvalidRequest {
		t.Fatalf("bad thread cursor: %v, want invalid_request", err)
	}
	if _, err := c.Search(ctx, restarea.SearchQuery{Q: "x", Cursor: "not-a-cursor"}); restarea.ErrorCode(err) != restarea.CodeInvalidRequest {
		t.Fatalf("bad search cursor: %v, want invalid_request", err)
	}
}
