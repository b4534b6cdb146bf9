package fsm_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

func TestListOrder(t *testing.T) {
	h := newHarness(t)
	q1 := h.create(question(t, "q1"))
	r1 := h.create(reply(t, q1, "r1"))
	q2 := h.create(question(t, "q2"))
	r2 := h.create(reply(t, q1, "r2"))
	r3 := h.create(reply(t, q1, "r3"))

	wantIDs(t, "threads newest first", threadIDs(t, h.f), q2, q1)
	wantIDs(t, "entries newest first", entryIDs(t, h.f), r3, r2, q2, r1, q1)
	wantIDs(t, "replies oldest first", replyIDs(t, h.f, q1, 0), r1, r2, r3)
	wantIDs(t, "no replies", replyIDs(t, h.f, q2, 0))
}

// Public reads never show request_id; the operators' list does.
func TestRequestIDOnlyForOperators(t *testing.T) {
	h := newHarness(t)
	q := question(t, "q")
	qid := h.create(q)
	rid := h.create(reply(t, qid, "r"))

	var public []restarea.Entry
	e, err := h.f.Thread(qid)
	public = append(public, e)
	if err != nil {
		t.Fatal(err)
	}
	e, err = h.f.Reply(rid)
	public = append(public, e)
	if err != nil {
		t.Fatal(err)
	}
	tp, _ := h.f.Threads("", 0)
	rp, _ := h.f.Replies(qid, "", 0)
	public = append(append(public, tp.Threads...), rp.Replies...)
	if len(public) != 4 {
		t.Fatalf("%d public entries, want 4", len(public))
	}
	for _, e := range public {
		if e.RequestID != "" {
			t.Errorf("public read of %s shows request_id", e.ID)
		}
	}
	ep, _ := h.f.Entries("", 0)
	for _, e := range ep.Entries {
		if e.RequestID == "" {
			t.Errorf("operators' list of %s lacks request_id", e.ID)
		}
	}
	if e, found, _ := h.f.Entry(qid); !found || e.RequestID != q.RequestID {
		t.Errorf("Entry: request_id %q, want %q", e.RequestID, q.RequestID)
	}
}

func TestPageArgs(t *testing.T) {
	h := newHarness(t)
	qid := h.create(question(t, "q"))
	for i := 0; i < 60; i++ {
		h.create(question(t, "filler"))
		h.create(reply(t, qid, "filler"))
	}
	lists := map[string]func(cursor string, limit int) (int, *string, error){
		"threads": func(c string, l int) (int, *string, error) {
			p, err := h.f.Threads(c, l)
			return len(p.Threads), p.NextCursor, err
		},
		"replies": func(c string, l int) (int, *string, error) {
			p, err := h.f.Replies(qid, c, l)
			return len(p.Replies), p.NextCursor, err
		},
		"entries": func(c string, l int) (int, *string, error) {
			p, err := h.f.Entries(c, l)
			return len(p.Entries), p.NextCursor, err
		},
	}
	short := base64.RawURLEncoding.EncodeToString([]byte{1, 2, 3})
	tests := []struct {
		name   string
		cursor string
		limit  int
		code   restarea.Code
		n      int
		next   bool
	}{
		{name: "limit 0 means 50", limit: 0, n: 50, next: true},
		{name: "limit 1", limit: 1, n: 1, next: true},
		{name: "limit 200", limit: 200, n: 60, next: false},
		{name: "limit 201", limit: 201, code: restarea.CodeInvalidRequest},
		{name: "negative limit", limit: -1, code: restarea.CodeInvalidRequest},
		{name: "cursor not base64", cursor: "!!not a cursor!!", code: restarea.CodeInvalidRequest},
		{name: "cursor of the wrong length", cursor: short, code: restarea.CodeInvalidRequest},
		{name: "padded base64 cursor", cursor: base64.URLEncoding.EncodeToString(make([]byte, 8)), code: restarea.CodeInvalidRequest},
	}
	for name, list := range lists {
		for _, tc := range tests {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				n, next, err := list(tc.cursor, tc.limit)
				if restarea.ErrorCode(err) != tc.code {
					t.Fatalf("err %v, want code %q", err, tc.code)
				}
				if err != nil {
					return
				}
				want := tc.n
				if name == "entries" && tc.limit == 200 {
					want = 121
				}
				if name == "threads" && tc.limit == 200 {
					want = 61
				}
				if n != want || (next != nil) != tc.next {
					t.Fatalf("%d entries, next cursor %v; want %d, %v", n, next != nil, want, tc.next)
				}
			})
		}
	}
}

// Walking with next_cursor returns every entry exactly once even when
// writes land between pages.
func TestPagingWhileWriting(t *testing.T) {
	h := newHarness(t)
	qid := h.create(question(t, "busy"))
	start := map[string]bool{qid: true}
	startReplies := map[string]bool{}
	for i := 0; i < 10; i++ {
		start[h.create(question(t, "q"))] = true
		startReplies[h.create(reply(t, qid, "r"))] = true
	}

	// Threads, newest first: threads that existed when the walk began are
	// all seen, once; new ones land before the cursor.
	seen := map[string]int{}
	cursor := ""
	for pages := 0; ; pages++ {
		p, err := h.f.Threads(cursor, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Threads {
			seen[e.ID]++
		}
		h.create(question(t, "between pages"))
		h.create(reply(t, qid, "between pages"))
		if p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
	}
	for id := range start {
		if seen[id] != 1 {
			t.Errorf("thread %s seen %d times", id, seen[id])
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("thread %s seen %d times", id, n)
		}
	}

	// Replies, oldest first: every reply, including those that arrive
	// during the walk, is seen once, in log order.
	var got []string
	cursor = ""
	added := 0
	for {
		p, err := h.f.Replies(qid, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ids(p.Replies)...)
		if added < 6 {
			h.create(reply(t, qid, "between reply pages"))
			h.create(question(t, "between reply pages"))
			added++
		}
		if p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
	}
	wantIDs(t, "replies walked while writing", got, replyIDs(t, h.f, qid, 200)...)
	for id := range startReplies {
		if !contains(got, id) {
			t.Errorf("reply %s missed", id)
		}
	}
}

// A cursor stays valid when the entry it names disappears between pages.
func TestCursorEntryRemoved(t *testing.T) {
	tests := []struct {
		name string
		op   fsm.Op
	}{{"hidden", fsm.OpHide}, {"deleted", fsm.OpDelete}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			a := h.create(question(t, "a"))
			b := h.create(question(t, "b"))
			c := h.create(question(t, "c"))
			qid := h.create(question(t, "with replies"))
			ra := h.create(reply(t, qid, "ra"))
			rb := h.create(reply(t, qid, "rb"))
			rc := h.create(reply(t, qid, "rc"))

			// Threads: the first page is the newest, c is the cursor of the
			// second page; remove c, and the walk goes on with b.
			p1, _ := h.f.Threads("", 2)
			wantIDs(t, "threads page 1", ids(p1.Threads), qid, c)
			h.admin(tc.op, c)
			h.admin(tc.op, qid)
			p2, err := h.f.Threads(*p1.NextCursor, 2)
			if err != nil {
				t.Fatal(err)
			}
			wantIDs(t, "threads page 2", ids(p2.Threads), b, a)

			// Threads, the cursor names the newest entry.
			h2 := newHarness(t)
			x := h2.create(question(t, "x"))
			y := h2.create(question(t, "y"))
			p1, _ = h2.f.Threads("", 1)
			e1, _ := h2.f.Entries("", 1)
			wantIDs(t, "first pages", append(ids(p1.Threads), ids(e1.Entries)...), y, y)
			h2.admin(tc.op, y)
			p2, _ = h2.f.Threads(*p1.NextCursor, 1)
			wantIDs(t, "threads after removing the newest", ids(p2.Threads), x)
			e2, _ := h2.f.Entries(*e1.NextCursor, 1)
			wantIDs(t, "entries after removing the newest", ids(e2.Entries), x)

			// Replies: remove the reply the cursor names.
			if tc.op == fsm.OpHide {
				h.admin(fsm.OpUnhide, qid)
			} else {
				return // the question is deleted, its replies are gone
			}
			r1, _ := h.f.Replies(qid, "", 2)
			wantIDs(t, "replies page 1", ids(r1.Replies), ra, rb)
			h.admin(tc.op, rb)
			r2, err := h.f.Replies(qid, *r1.NextCursor, 2)
			if err != nil {
				t.Fatal(err)
			}
			wantIDs(t, "replies page 2", ids(r2.Replies), rc)
		})
	}
}

func replyIDs(t *testing.T, f *fsm.FSM, thread string, limit int) []string {
	t.Helper()
	return ids(walk(t, func(c string) ([]restarea.Entry, *string, error) {
		p, err := f.Replies(thread, c, limit)
		return p.Replies, p.NextCursor, err
	}))
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestPageBytes: a page of large entries ends at restarea.MaxPageBytes of
// entry text, whatever its limit, and its cursor continues right after
// it, so paging yields every entry exactly once.
func TestPageBytes(t *testing.T) {
	h := newHarness(t)
	big := strings.Repeat("😀", restarea.MaxBody) // 80,000 bytes
	qid := h.create(question(t, "q"))
	var want []string
	for range 30 {
		want = append(want, h.create(reply(t, qid, big)))
	}
	for range 20 {
		q := question(t, "large")
		q.Body = big
		h.create(q)
	}
	perPage := restarea.MaxPageBytes / (len(big) + len("agent"))
	check := func(what string, es []restarea.Entry, next *string, total int) {
		t.Helper()
		size := 0
		for _, e := range es {
			size += e.TextBytes()
		}
		if size > restarea.MaxPageBytes {
			t.Errorf("%s: a page of %d bytes of text, cap %d", what, size, restarea.MaxPageBytes)
		}
		if len(es) != min(perPage, total) || (next == nil) != (total <= perPage) {
			t.Errorf("%s: %d entries (next %v), want %d of %d", what, len(es), next != nil, min(perPage, total), total)
		}
	}
	rp, err := h.f.Replies(qid, "", restarea.MaxPageLimit)
	if err != nil {
		t.Fatal(err)
	}
	check("replies", rp.Replies, rp.NextCursor, 30)
	tp, err := h.f.Threads("", restarea.MaxPageLimit)
	if err != nil {
		t.Fatal(err)
	}
	check("threads", tp.Threads, tp.NextCursor, 21)
	ep, err := h.f.Entries("", restarea.MaxPageLimit)
	if err != nil {
		t.Fatal(err)
	}
	check("entries", ep.Entries, ep.NextCursor, 51)

	got := walk(t, func(c string) ([]restarea.Entry, *string, error) {
		p, err := h.f.Replies(qid, c, restarea.MaxPageLimit)
		return p.Replies, p.NextCursor, err
	})
	var ids []string
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	wantIDs(t, "every reply once, in order", ids, want...)
}
