package testkit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

func TestPoll(t *testing.T) {
	n := 0
	if err := testkit.Poll(context.Background(), 10*time.Second, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("Poll: %v after %d calls", err, n)
	}
	err := testkit.Poll(context.Background(), 20*time.Millisecond, func() error { return errors.New("never") })
	if err == nil || err.Error() != "never" {
		t.Fatalf("Poll past its timeout: %v, want the condition's last error", err)
	}
}

func TestFakeServiceRules(t *testing.T) {
	ctx := context.Background()
	f := testkit.NewFakeService()
	meta := restarea.PostMeta{Source: "127.0.0.1", Channel: restarea.ChannelHTTP}
	q := testkit.Question("t")
	res, err := f.Post(ctx, q, meta)
	if err != nil || res.Replayed {
		t.Fatalf("post: %+v %v", res, err)
	}
	if again, err := f.Post(ctx, q, meta); err != nil || !again.Replayed || again.Entry.ID != res.Entry.ID {
		t.Fatalf("replay: %+v %v", again, err)
	}
	other := q
	other.Body = "other"
	if _, err := f.Post(ctx, other, meta); restarea.ErrorCode(err) != restarea.CodeConflict {
		t.Fatalf("other content: %v", err)
	}
	if _, err := f.Post(ctx, testkit.Reply(testkit.Question("x").RequestID, "b"), meta); restarea.ErrorCode(err) != restarea.CodeParentNotFound {
		t.Fatalf("reply to nothing: %v", err)
	}
	bad := q
	bad.RequestID = "nope"
	if _, err := f.Post(ctx, bad, meta); restarea.ErrorCode(err) != restarea.CodeInvalidRequest {
		t.Fatalf("bad request: %v", err)
	}
	if _, err := f.OperatorPost(ctx, testkit.Reply(res.Entry.ID, "b"), meta); restarea.ErrorCode(err) != restarea.CodeInvalidRequest {
		t.Fatalf("operator reply: %v", err)
	}
	r, err := f.Post(ctx, testkit.Reply(res.Entry.ID, "b"), meta)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.HideEntry(ctx, res.Entry.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.GetReply(ctx, r.Entry.ID, restarea.ReadOptions{}); restarea.ErrorCode(err) != restarea.CodeNotFound {
		t.Fatalf("reply of a hidden question: %v", err)
	}
	if err := f.DeleteEntry(ctx, res.Entry.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Post(ctx, q, meta); restarea.ErrorCode(err) != restarea.CodeDeleted {
		t.Fatalf("replay of a deleted entry: %v", err)
	}
	if n, c := f.Last(); n != 9 || c.Method != "Post" {
		t.Fatalf("calls: %d, last %+v", n, c)
	}
}

func TestFakeServicePages(t *testing.T) {
	ctx := context.Background()
	f := testkit.NewFakeService()
	for range 5 {
		f.AddQuestion("q", "b")
	}
	f.SetPageSize(2)
	var seen int
	opts := restarea.ListOptions{Limit: 3}
	for {
		p, err := f.ListThreads(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		seen += len(p.Threads)
		if p.NextCursor == nil {
			break
		}
		opts.Cursor = *p.NextCursor
	}
	if seen != 5 {
		t.Fatalf("paged through %d threads, want 5", seen)
	}
}

// TestFakeServiceNewestReplies: replies newest first, as a node lists
// them for ListOptions.NewestFirst, a page at a time.
func TestFakeServiceNewestReplies(t *testing.T) {
	ctx := context.Background()
	f := testkit.NewFakeService()
	q := f.AddQuestion("q", "b")
	var want []string
	for i := range 5 {
		want = append([]string{f.AddReply(q.ID, fmt.Sprint("r", i)).ID}, want...)
	}
	var got []string
	opts := restarea.ListOptions{Limit: 2, NewestFirst: true}
	for range 5 {
		p, err := f.ListReplies(ctx, q.ID, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Replies {
			got = append(got, e.ID)
		}
		if p.NextCursor == nil {
			break
		}
		opts.Cursor = *p.NextCursor
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("replies %v, want %v (newest first)", got, want)
	}
}
