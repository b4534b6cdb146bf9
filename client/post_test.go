package client_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/client"
	"github.com/restarea/restarea/client/clienttest"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// Every fault the proxy can inject, on the post or on the read-back, ends
// in confirmed with exactly one stored entry: retries reuse the request_id
// and the content, and the read-back finds the entry.
func TestPostThroughFaults(t *testing.T) {
	n := testnode.Start(t)
	parent := seed(t, n, testkit.Question("parent of the fault replies"))
	cases := []struct {
		name  string
		reply bool
		posts []clienttest.Mode
		reads []clienttest.Mode
	}{
		{name: "no fault"},
		{name: "answer dropped after storing", posts: []clienttest.Mode{clienttest.DropAnswer}},
		{name: "answer dropped twice", posts: []clienttest.Mode{clienttest.DropAnswer, clienttest.DropAnswer}},
		{name: "429 with Retry-After", posts: []clienttest.Mode{clienttest.TooManyRequests}},
		{name: "503 before storing", posts: []clienttest.Mode{clienttest.Unavailable}},
		{name: "503 after storing", posts: []clienttest.Mode{clienttest.UnavailableAfterForward}},
		{name: "answer cut mid-body", posts: []clienttest.Mode{clienttest.CutBody}},
		{name: "every fault in a row", posts: []clienttest.Mode{
			clienttest.DropAnswer, clienttest.CutBody, clienttest.UnavailableAfterForward, clienttest.Unavailable, clienttest.TooManyRequests}},
		{name: "read-back faults", reads: []clienttest.Mode{clienttest.DropAnswer, clienttest.CutBody, clienttest.Unavailable}},
		{name: "reply, answer dropped", reply: true, posts: []clienttest.Mode{clienttest.DropAnswer}},
		{name: "reply, answer cut, read-back cut", reply: true,
			posts: []clienttest.Mode{clienttest.CutBody}, reads: []clienttest.Mode{clienttest.CutBody, clienttest.TooManyRequests}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // one node, a proxy each: the Retry-After waits overlap
			p := clienttest.New(t, n.URL())
			p.ScriptPosts(tc.posts...)
			p.ScriptReads(tc.reads...)
			c, j := newClient(t, []string{p.URL()})
			req := testkit.Question("fault: " + tc.name)
			if tc.reply {
				req = testkit.Reply(parent.ID, "fault: "+tc.name)
			}
			res, err := c.Post(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != client.Confirmed || res.ID == "" || res.URL == "" || res.Hidden {
				t.Fatalf("result %+v, want confirmed with an id and url", res)
			}
			if tc.reply && res.BookmarkURL == "" {
				t.Errorf("reply without a bookmark_url: %+v", res)
			}
			if got, want := res.Attempts, len(tc.posts)+1; got != want {
				t.Errorf("attempts %d, want %d (proxy saw %v)", got, want, p.Seen())
			}
			if got := stored(t, n, req.RequestID); got != 1 {
				t.Fatalf("%d entries stored with request_id %s, want 1", got, req.RequestID)
			}
			if left := pending(t, j); len(left) != 0 {
				t.Fatalf("journal still holds %d pending posts", len(left))
			}
		})
	}
}

// A reply is read back by paging its question's replies: with more
// replies than fit on one page, the new one is on the second page.
func TestPostReplyReadBackPages(t *testing.T) {
	n := testnode.Start(t)
	parent := seed(t, n, testkit.Question("a busy thread"))
	var wg sync.WaitGroup
	for i := range restarea.MaxPageLimit + 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seed(t, n, testkit.Reply(parent.ID, fmt.Sprintf("filler %d", i)))
		}()
	}
	wg.Wait()
	p := clienttest.New(t, n.URL())
	p.ScriptPosts(clienttest.DropAnswer)
	// The second page's read is cut once: the page is read again, not the
	// whole list.
	p.ScriptReads(clienttest.Forward, clienttest.CutBody)
	c, _ := newClient(t, []string{p.URL()})
	req := testkit.Reply(parent.ID, "the reply to find")
	res, err := c.Post(context.Background(), req)
	if err != nil || res.Outcome != client.Confirmed {
		t.Fatalf("post: %+v, %v", res, err)
	}
	if got := stored(t, n, req.RequestID); got != 1 {
		t.Fatalf("%d stored, want 1", got)
	}
}

// An unreachable server is skipped for the next one in the list.
func TestPostMovesToNextServer(t *testing.T) {
	n := testnode.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	c, _ := newClient(t, []string{dead, n.URL()})
	req := testkit.Question("rotate")
	res, err := c.Post(context.Background(), req)
	if err != nil || res.Outcome != client.Confirmed || res.Attempts != 2 {
		t.Fatalf("post: %+v, %v", res, err)
	}
	if got := stored(t, n, req.RequestID); got != 1 {
		t.Fatalf("%d stored, want 1", got)
	}
}

// A post whose answers keep getting lost is reported unconfirmed, not
// done, stays pending in the journal, and Resume later confirms it
// without storing a second entry.
func TestUnconfirmedThenResume(t *testing.T) {
	n := testnode.Start(t)
	p := clienttest.New(t, n.URL())
	p.ScriptPosts(clienttest.DropAnswer, clienttest.DropAnswer, clienttest.DropAnswer)
	c, j := newClient(t, []string{p.URL()}, func(o *client.Options) { o.MaxAttempts = 3 })
	req := testkit.Question("lost three times")
	res, err := c.Post(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != client.Unconfirmed || res.Outcome.Final() || !strings.Contains(res.Reason, "lost") || res.Attempts != 3 {
		t.Fatalf("result %+v, want unconfirmed after 3 lost answers", res)
	}
	left := pending(t, j)
	if len(left) != 1 || left[0].Request.RequestID != req.RequestID || left[0].Reason == "" {
		t.Fatalf("pending %+v, want the post with its reason", left)
	}

	// The entry was stored by the first attempt; resuming (straight to the
	// node) replays it.
	c2, err := client.New(client.Options{Servers: []string{n.URL()}, Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	results, err := c2.Resume(context.Background())
	if err != nil || len(results) != 1 || results[0].Outcome != client.Confirmed || results[0].RequestID != req.RequestID {
		t.Fatalf("resume: %+v, %v", results, err)
	}
	if got := stored(t, n, req.RequestID); got != 1 {
		t.Fatalf("%d stored, want 1", got)
	}
	if left := pending(t, j); len(left) != 0 {
		t.Fatalf("still pending after resume: %+v", left)
	}
}

// The definite answers end the post at once with their own outcome.
func TestPostDefiniteOutcomes(t *testing.T) {
	n := testnode.Start(t)
	ctx := context.Background()
	cases := []struct {
		name    string
		prepare func(t *testing.T) restarea.PostRequest // returns the request to post
		want    client.Outcome
		hidden  bool
		code    restarea.Code
	}{
		{
			name: "conflict: same id, other content",
			prepare: func(t *testing.T) restarea.PostRequest {
				first := testkit.Question("original")
				seed(t, n, first)
				first.Body = "changed"
				return first
			},
			want: client.Conflict, code: restarea.CodeConflict,
		},
		{
			name: "deleted by an operator",
			prepare: func(t *testing.T) restarea.PostRequest {
				req := testkit.Question("to be deleted")
				e := seed(t, n, req)
				if err := n.DeleteEntry(ctx, e.ID); err != nil {
					t.Fatal(err)
				}
				return req
			},
			want: client.Deleted, code: restarea.CodeDeleted,
		},
		{
			name: "hidden by an operator: confirmed with a note",
			prepare: func(t *testing.T) restarea.PostRequest {
				req := testkit.Question("to be hidden")
				e := seed(t, n, req)
				if _, err := n.HideEntry(ctx, e.ID); err != nil {
					t.Fatal(err)
				}
				return req
			},
			want: client.Confirmed, hidden: true,
		},
		{
			name:    "reply to a missing question",
			prepare: func(*testing.T) restarea.PostRequest { return testkit.Reply(client.NewRequestID(), "to nowhere") },
			want:    client.Rejected, code: restarea.CodeParentNotFound,
		},
		{
			name: "invalid content is refused before sending",
			prepare: func(*testing.T) restarea.PostRequest {
				req := testkit.Question("")
				return req
			},
			want: client.Rejected, code: restarea.CodeInvalidRequest,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.prepare(t)
			c, j := newClient(t, []string{n.URL()})
			res, err := c.Post(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tc.want || res.Hidden != tc.hidden || res.Code != tc.code || res.Reason == "" {
				t.Fatalf("result %+v, want %s (hidden %v, code %q) with a reason", res, tc.want, tc.hidden, tc.code)
			}
			if left := pending(t, j); len(left) != 0 {
				t.Fatalf("a final outcome left %d pending", len(left))
			}
		})
	}
}

// Reusing a request_id with other content is caught by the journal before
// anything is sent.
func TestJournalConflictNotSent(t *testing.T) {
	n := testnode.Start(t)
	p := clienttest.New(t, n.URL())
	c, _ := newClient(t, []string{p.URL()})
	req := testkit.Question("first content")
	if res, err := c.Post(context.Background(), req); err != nil || res.Outcome != client.Confirmed {
		t.Fatalf("first: %+v, %v", res, err)
	}
	req.Title = "second content"
	res, err := c.Post(context.Background(), req)
	if err != nil || res.Outcome != client.Conflict || !strings.Contains(res.Reason, "not sent") {
		t.Fatalf("second: %+v, %v", res, err)
	}
	if seen := p.Seen(); len(seen) != 1 {
		t.Fatalf("proxy saw %d posts, want 1", len(seen))
	}
}

// Writes disabled: the post is kept pending and reported unconfirmed,
// unless the caller allows waiting, in which case it goes through when
// writes resume.
func TestWritesDisabled(t *testing.T) {
	n := testnode.Start(t)
	ctx := context.Background()
	set := func(disabled bool) {
		if _, err := n.UpdateSettings(ctx, restarea.SettingsPatch{WritesDisabled: &disabled}); err != nil {
			t.Fatal(err)
		}
	}
	set(true)
	c, j := newClient(t, []string{n.URL()})
	req := testkit.Question("while writes are off")
	res, err := c.Post(ctx, req)
	if err != nil || res.Outcome != client.Unconfirmed || res.Code != restarea.CodeWritesDisabled || res.Attempts != 1 {
		t.Fatalf("post: %+v, %v", res, err)
	}
	if left := pending(t, j); len(left) != 1 {
		t.Fatalf("pending %d, want 1", len(left))
	}

	// Waiting allowed: the proxy answers 503 writes_disabled with
	// Retry-After: 1 once (the node's own delay is longer), and the client
	// waits it out instead of stopping.
	set(false)
	p := clienttest.New(t, n.URL())
	p.ScriptPosts(clienttest.WritesDisabled)
	w, _ := newClient(t, []string{p.URL()}, func(o *client.Options) { o.WaitWhileWritesDisabled = true })
	res, err = w.Post(ctx, req)
	if err != nil || res.Outcome != client.Confirmed || res.Attempts != 2 {
		t.Fatalf("waiting post: %+v, %v", res, err)
	}
	if got := stored(t, n, req.RequestID); got != 1 {
		t.Fatalf("%d stored, want 1", got)
	}
}

// A Retry-After longer than what is left of the deadline ends the post as
// unconfirmed at once instead of sleeping past the deadline.
func TestRetryAfterBeyondDeadline(t *testing.T) {
	n := testnode.Start(t)
	p := clienttest.New(t, n.URL())
	p.ScriptPosts(clienttest.TooManyRequests)
	c, j := newClient(t, []string{p.URL()}, func(o *client.Options) { o.Deadline = 300 * time.Millisecond })
	start := time.Now()
	res, err := c.Post(context.Background(), testkit.Question("impatient"))
	if err != nil || res.Outcome != client.Unconfirmed || res.Code != restarea.CodeRateLimited || !strings.Contains(res.Reason, "deadline") {
		t.Fatalf("post: %+v, %v", res, err)
	}
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Errorf("took %s; it should not have waited", d)
	}
	if len(pending(t, j)) != 1 {
		t.Fatal("the unconfirmed post is not pending in the journal")
	}
}

// A post the server stored but that could not be read back is
// unconfirmed, not done: the id and url are reported, and so is why.
func TestStoredButNotReadBack(t *testing.T) {
	n := testnode.Start(t)
	p := clienttest.New(t, n.URL())
	// More faults than the client will try: net/http itself retries a GET
	// whose reused connection closed, which uses up scripted faults too.
	faults := make([]clienttest.Mode, 32)
	for i := range faults {
		faults[i] = clienttest.DropAnswer
	}
	faults[2] = clienttest.CutBody
	p.ScriptReads(faults...)
	c, j := newClient(t, []string{p.URL()}, func(o *client.Options) { o.MaxAttempts = 2 })
	req := testkit.Question("stored, never seen")
	res, err := c.Post(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != client.Unconfirmed || res.ID == "" || res.URL == "" || !strings.Contains(res.Reason, "not read back") {
		t.Fatalf("result %+v, want unconfirmed with the id and the reason", res)
	}
	if got := stored(t, n, req.RequestID); got != 1 {
		t.Fatalf("%d stored, want 1", got)
	}
	if len(pending(t, j)) != 1 {
		t.Fatal("not pending in the journal")
	}
}
