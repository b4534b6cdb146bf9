package client_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/client"
	"github.com/restarea/restarea/client/clienttest"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

func TestReads(t *testing.T) {
	n := testnode.Start(t)
	ctx := context.Background()
	q := seed(t, n, testkit.Question("read me"))
	var want []string
	for i := range 5 {
		want = append(want, seed(t, n, testkit.Reply(q.ID, fmt.Sprintf("reply %d", i))).ID)
	}
	p := clienttest.New(t, n.URL())
	// Faults on reads are retried within the budget.
	p.ScriptReads(clienttest.CutBody, clienttest.DropAnswer, clienttest.Unavailable)
	c, _ := newClient(t, []string{p.URL()})

	got, err := c.Thread(ctx, q.ID, restarea.ReadOptions{Consistency: restarea.ConsistencyStrong})
	if err != nil || got.ID != q.ID || got.Title != "read me" || got.URL == "" {
		t.Fatalf("thread: %+v, %v", got, err)
	}
	r, err := c.Reply(ctx, want[2], restarea.ReadOptions{})
	if err != nil || r.ID != want[2] || r.ParentID != q.ID || r.BookmarkURL == "" {
		t.Fatalf("reply: %+v, %v", r, err)
	}

	cases := []struct {
		name  string
		limit int
		pages int
	}{
		{name: "default page", pages: 1},
		{name: "two per page", limit: 2, pages: 3},
		{name: "one per page", limit: 1, pages: 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ids []string
			pages := 0
			for page, err := range c.Replies(ctx, q.ID, restarea.ListOptions{Limit: tc.limit}) {
				if err != nil {
					t.Fatal(err)
				}
				pages++
				for _, e := range page.Replies {
					ids = append(ids, e.ID)
				}
			}
			if fmt.Sprint(ids) != fmt.Sprint(want) || pages != tc.pages {
				t.Fatalf("got %d pages %v, want %d pages %v", pages, ids, tc.pages, want)
			}
		})
	}

	// Stopping early is allowed.
	for range c.Replies(ctx, q.ID, restarea.ListOptions{Limit: 1}) {
		break
	}
}

func TestReadNotFound(t *testing.T) {
	n := testnode.Start(t)
	ctx := context.Background()
	c, _ := newClient(t, []string{n.URL()})
	missing := client.NewRequestID()
	if _, err := c.Thread(ctx, missing, restarea.ReadOptions{}); restarea.ErrorCode(err) != restarea.CodeNotFound {
		t.Errorf("thread: %v, want not_found", err)
	}
	if _, err := c.Reply(ctx, missing, restarea.ReadOptions{}); restarea.ErrorCode(err) != restarea.CodeNotFound {
		t.Errorf("reply: %v, want not_found", err)
	}
	calls := 0
	for _, err := range c.Replies(ctx, missing, restarea.ListOptions{}) {
		calls++
		if restarea.ErrorCode(err) != restarea.CodeNotFound {
			t.Errorf("replies: %v, want not_found", err)
		}
	}
	if calls != 1 {
		t.Errorf("%d yields, want 1", calls)
	}
}
