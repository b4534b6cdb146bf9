package fsm_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// newestIDs walks a thread's replies newest first, limit a page.
func newestIDs(t *testing.T, f *fsm.FSM, thread string, limit int) []string {
	t.Helper()
	return ids(walk(t, func(c string) ([]restarea.Entry, *string, error) {
		p, err := f.RepliesNewest(thread, c, limit)
		return p.Replies, p.NextCursor, err
	}))
}

// TestRepliesNewest: a thread's replies newest first are its replies
// oldest first, reversed, for every thread of the index (whichever sorts
// last among them, whose range ends the bucket, and the others, followed
// by another thread's), and paging with the cursor lists each once.
func TestRepliesNewest(t *testing.T) {
	h := newHarness(t)
	threads := []string{h.create(question(t, "a")), h.create(question(t, "b")), h.create(question(t, "c"))}
	empty := h.create(question(t, "no replies"))
	want := map[string][]string{}
	for range 7 {
		for _, q := range threads {
			want[q] = append(want[q], h.create(reply(t, q, "r")))
		}
		h.create(question(t, "between"))
	}
	for _, q := range threads {
		newest := slices.Clone(want[q])
		slices.Reverse(newest)
		wantIDs(t, "oldest first", replyIDs(t, h.f, q, 0), want[q]...)
		for _, limit := range []int{0, 1, 2, 3, 7, restarea.MaxPageLimit} {
			wantIDs(t, "newest first", newestIDs(t, h.f, q, limit), newest...)
		}
		p, err := h.f.RepliesNewest(q, "", 3)
		if err != nil || len(p.Replies) != 3 || p.NextCursor == nil {
			t.Fatalf("first page of 3: %d replies, next %v, err %v", len(p.Replies), p.NextCursor, err)
		}
		wantIDs(t, "first page", ids(p.Replies), newest[:3]...)
	}
	p, err := h.f.RepliesNewest(empty, "", 0)
	if err != nil || len(p.Replies) != 0 || p.NextCursor != nil {
		t.Errorf("a thread without replies: %d replies, next %v, err %v", len(p.Replies), p.NextCursor, err)
	}

	// A question that is not public has no replies to list.
	h.admin(fsm.OpHide, threads[0])
	if _, err := h.f.RepliesNewest(threads[0], "", 0); restarea.ErrorCode(err) != restarea.CodeNotFound {
		t.Errorf("replies of a hidden question: %v, want not_found", err)
	}
	// Bad cursors and limits are refused as in the other order.
	for _, c := range []struct {
		cursor string
		limit  int
	}{{"!!", 1}, {"", restarea.MaxPageLimit + 1}, {"", -1}} {
		if _, err := h.f.RepliesNewest(threads[1], c.cursor, c.limit); restarea.ErrorCode(err) != restarea.CodeInvalidRequest {
			t.Errorf("cursor %q limit %d: %v, want invalid_request", c.cursor, c.limit, err)
		}
	}
}

// TestRepliesNewestCursor: a newest-first cursor goes on with the replies
// older than the last one listed: replies that arrive during the walk are
// newer and not listed, hidden replies are skipped, and the walk goes on
// when the reply the cursor names is hidden or deleted.
func TestRepliesNewestCursor(t *testing.T) {
	for _, op := range []fsm.Op{fsm.OpHide, fsm.OpDelete} {
		h := newHarness(t)
		q := h.create(question(t, "busy"))
		var rs []string
		for range 6 {
			rs = append(rs, h.create(reply(t, q, "r")))
		}
		p1, err := h.f.RepliesNewest(q, "", 2)
		if err != nil {
			t.Fatal(err)
		}
		wantIDs(t, "page 1", ids(p1.Replies), rs[5], rs[4])
		h.create(reply(t, q, "arrived during the walk"))
		h.admin(op, rs[4]) // the reply the cursor names
		h.admin(op, rs[2])
		p2, err := h.f.RepliesNewest(q, *p1.NextCursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		wantIDs(t, "page 2", ids(p2.Replies), rs[3], rs[1])
		p3, err := h.f.RepliesNewest(q, *p2.NextCursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		wantIDs(t, "page 3", ids(p3.Replies), rs[0])
		if p3.NextCursor != nil {
			t.Errorf("%v: the last page has a next cursor", op)
		}
	}
}

// TestRepliesNewestPageBytes: a newest-first page of large replies ends at
// restarea.MaxPageBytes of text like the other lists, with the newest that
// fit, and reads no further.
func TestRepliesNewestPageBytes(t *testing.T) {
	h := newHarness(t)
	big := strings.Repeat("😀", restarea.MaxBody)
	q := h.create(question(t, "q"))
	var rs []string
	for range 30 {
		rs = append(rs, h.create(reply(t, q, big)))
	}
	perPage := restarea.MaxPageBytes / (len(big) + len("agent"))
	p, err := h.f.RepliesNewest(q, "", 50)
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, e := range p.Replies {
		size += e.TextBytes()
	}
	if len(p.Replies) != perPage || size > restarea.MaxPageBytes || p.NextCursor == nil {
		t.Fatalf("%d replies, %d bytes, next %v; want the newest %d within %d bytes", len(p.Replies), size, p.NextCursor != nil, perPage, restarea.MaxPageBytes)
	}
	newest := slices.Clone(rs)
	slices.Reverse(newest)
	wantIDs(t, "the newest that fit", ids(p.Replies), newest[:perPage]...)
	wantIDs(t, "every reply once", newestIDs(t, h.f, q, 50), newest...)
}
