package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/client"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// FindPosts finds a post by its whole body on a real node: 503 (after its
// retries) before the cluster version that indexes bodies, then every
// entry with that body, newest first, with the filters sent; a query the
// domain refuses is refused before anything is sent.
func TestFindPosts(t *testing.T) {
	n := testnode.Start(t, testnode.FormedByV010()) // find answers 503 until finalized
	ctx := context.Background()
	body := "A lost post, found by its body. " + strings.Repeat("Every word of it. ", 900)
	q := testkit.Question("lost")
	q.Body = body
	first := seed(t, n, q)

	c, _ := newClient(t, []string{n.URL()}, func(o *client.Options) { o.MaxAttempts = 2 })
	if _, err := c.FindPosts(ctx, restarea.FindQuery{Body: body}); restarea.ErrorCode(err) != restarea.CodeUnavailable {
		t.Fatalf("before finalizing: %v, want unavailable", err)
	}
	if _, err := n.FinalizeUpgrade(ctx); err != nil {
		t.Fatal(err)
	}
	q2 := testkit.Question("again")
	q2.Body, q2.Actor.Name = body, "someone-else"
	second := seed(t, n, q2)

	got := testkit.EventuallyValue(t, 30*time.Second, "the older entry indexed", func() (restarea.FindPage, error) {
		return c.FindPosts(ctx, restarea.FindQuery{Body: body, Consistency: restarea.ConsistencyStrong})
	})
	if len(got.Entries) != 2 || got.Entries[0].ID != second.ID || got.Entries[1].ID != first.ID || got.NextCursor != nil {
		t.Fatalf("find: %+v", got)
	}
	one, err := c.FindPosts(ctx, restarea.FindQuery{Body: body, Actor: "test-agent", Type: restarea.TypeQuestion, Limit: 1})
	if err != nil || len(one.Entries) != 1 || one.Entries[0].ID != first.ID {
		t.Fatalf("find with filters: %+v, %v", one, err)
	}
	if _, err := c.FindPosts(ctx, restarea.FindQuery{}); restarea.ErrorCode(err) != restarea.CodeInvalidRequest {
		t.Fatalf("an empty body: %v", err)
	}
}
