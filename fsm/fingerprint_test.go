package fsm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// raiseTo raises h's cluster version step by step to v.
func (h *harness) raiseTo(v int) {
	h.t.Helper()
	for next := h.f.ClusterVersion() + 1; next <= v; next++ {
		if r := h.apply(fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: next}); r.Err != nil {
			h.t.Fatalf("raise to %d: %+v", next, r.Err)
		}
	}
}

// find runs a find of body with q's filters (q.Body is replaced) and
// returns the ids it found on every page, following next_cursor.
func (h *harness) find(body string, q restarea.FindQuery) []string {
	h.t.Helper()
	q.Body = body
	q, err := q.Validate()
	if err != nil {
		h.t.Fatalf("validate: %v", err)
	}
	var ids []string
	for i := 0; ; i++ {
		p, err := h.f.Find(q)
		if err != nil {
			h.t.Fatalf("find page %d: %v", i, err)
		}
		for _, e := range p.Entries {
			if e.RequestID != "" {
				h.t.Fatalf("a find showed request_id %s", e.RequestID)
			}
			ids = append(ids, e.ID)
		}
		if p.NextCursor == nil {
			return ids
		}
		if i > 1000 {
			h.t.Fatal("paging does not end")
		}
		q.Cursor = *p.NextCursor
	}
}

func (h *harness) findCode(body string) restarea.Code {
	h.t.Helper()
	q, err := restarea.FindQuery{Body: body}.Validate()
	if err != nil {
		h.t.Fatal(err)
	}
	_, err = h.f.Find(q)
	return restarea.ErrorCode(err)
}

func sameIDs(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

// From cluster version 4 a post is found by its whole body, whatever its
// Unicode form and newlines, newest first; only public entries are found,
// and every filter narrows the answer.
func TestFindByBody(t *testing.T) {
	h := newHarness(t)
	h.raiseTo(4)
	body := "Caf\u0065\u0301 au lait?\r\nLine two. " + strings.Repeat("long ", 3900) // NFD, CRLF, 19,5xx characters
	q1 := question(t, "first")
	q1.Body = restarea.NormalizeText(body)
	id1 := h.create(q1)
	h.advance(time.Minute)
	q2 := question(t, "second")
	q2.Body, q2.Actor.Name = q1.Body, "other-agent"
	id2 := h.create(q2)
	other := h.create(question(t, "unrelated"))
	r1 := h.create(reply(t, id1, q1.Body))

	nfc := "Caf\u00e9 au lait?\nLine two. " + strings.Repeat("long ", 3900)
	if got := h.find(nfc, restarea.FindQuery{}); !sameIDs(got, []string{r1, id2, id1}) {
		t.Fatalf("find by the NFC body: %v, want %v", got, []string{r1, id2, id1})
	}
	if got := h.find(body, restarea.FindQuery{Type: restarea.TypeQuestion}); !sameIDs(got, []string{id2, id1}) {
		t.Fatalf("questions only: %v", got)
	}
	if got := h.find(body, restarea.FindQuery{Actor: "other-agent"}); !sameIDs(got, []string{id2}) {
		t.Fatalf("by actor: %v", got)
	}
	if got := h.find(body, restarea.FindQuery{ParentID: strings.ToUpper(id1)}); !sameIDs(got, []string{r1}) {
		t.Fatalf("by parent: %v", got)
	}
	if got := h.find(body, restarea.FindQuery{Since: time.Unix(0, t0).Add(30 * time.Second)}); !sameIDs(got, []string{r1, id2}) {
		t.Fatalf("since: %v", got)
	}
	if got := h.find(body+" ", restarea.FindQuery{}); len(got) != 0 {
		t.Fatalf("another body found %v", got)
	}
	if got := h.find("body of unrelated", restarea.FindQuery{}); !sameIDs(got, []string{other}) {
		t.Fatalf("a short body: %v", got)
	}

	// Hidden: not found, nor its replies; unhidden: found again.
	h.admin(fsm.OpHide, id1)
	if got := h.find(body, restarea.FindQuery{}); !sameIDs(got, []string{id2}) {
		t.Fatalf("with the question hidden: %v", got)
	}
	h.admin(fsm.OpUnhide, id1)
	// Deleted: never again.
	h.admin(fsm.OpDelete, id2)
	if got := h.find(body, restarea.FindQuery{}); !sameIDs(got, []string{r1, id1}) {
		t.Fatalf("after a delete: %v", got)
	}
	// Expired: gone from the index with the entry.
	h.advance(48 * time.Hour)
	if r := h.expire(24*time.Hour, 24*time.Hour, 100); r.Err != nil || r.Expired == 0 {
		t.Fatalf("expire: %+v", r)
	}
	if got := h.find(body, restarea.FindQuery{}); len(got) != 0 {
		t.Fatalf("after expiry: %v", got)
	}
}

// Pages of a body many entries share: newest first, limit entries at
// most, never more than MaxFindScan entries examined, so a filter that
// keeps only the oldest gives short pages that go on to it.
func TestFindPagesAreBounded(t *testing.T) {
	h := newHarness(t)
	h.raiseTo(4)
	var ids []string
	for i := range restarea.MaxFindScan + 50 {
		q := question(t, "same")
		q.Body = "thanks!"
		if i == 0 {
			q.Actor.Name = "the-first"
		}
		ids = append(ids, h.create(q))
	}
	want := make([]string, len(ids))
	for i, id := range ids {
		want[len(ids)-1-i] = id
	}
	if got := h.find("thanks!", restarea.FindQuery{Limit: 7}); !sameIDs(got, want) {
		t.Fatalf("all pages: %d ids, want %d, newest first", len(got), len(want))
	}
	q, _ := restarea.FindQuery{Body: "thanks!", Actor: "the-first"}.Validate()
	p, err := h.f.Find(q)
	if err != nil || len(p.Entries) != 0 || p.NextCursor == nil {
		t.Fatalf("first page with a filter that keeps the oldest: %d entries, cursor %v, %v; want none and a cursor", len(p.Entries), p.NextCursor, err)
	}
	if got := h.find("thanks!", restarea.FindQuery{Actor: "the-first"}); !sameIDs(got, ids[:1]) {
		t.Fatalf("followed to the end: %v, want %v", got, ids[:1])
	}
}

// Before cluster version 4 a find answers 503: the entries are not
// indexed by their body, and "no match" would tell a client to post
// again. A backfill command is refused there.
func TestFindNeedsClusterVersion4(t *testing.T) {
	h := newHarness(t)
	h.raiseTo(3)
	h.create(question(t, "old"))
	if c := h.findCode("body of old"); c != restarea.CodeUnavailable {
		t.Fatalf("find at cluster version 3: %q, want unavailable", c)
	}
	if r := h.apply(fsm.Command{Op: fsm.OpBackfill, Backfill: &fsm.BackfillCommand{MaxItems: 10}}); r.Err == nil || r.Err.Code != restarea.CodeInvalidRequest {
		t.Fatalf("backfill at cluster version 3: %+v, want invalid_request", r.Err)
	}
}

// Entries stored before cluster version 4 are indexed by the backfill
// commands, a bounded number each, oldest first; until the last one a
// find answers 503, then it finds old and new entries alike, each once.
func TestBackfillIndexesOlderEntries(t *testing.T) {
	h := newHarness(t)
	var old []string
	for range 7 {
		q := question(t, "before")
		q.Body = "an old body"
		old = append(old, h.create(q))
	}
	h.admin(fsm.OpDelete, old[3]) // a deleted entry is not in the entries bucket any more
	h.raiseTo(4)
	q := question(t, "after")
	q.Body = "an old body"
	newID := h.create(q)
	if pending, err := h.f.BackfillPending(); err != nil || !pending {
		t.Fatalf("BackfillPending = %v, %v; want true", pending, err)
	}
	if c := h.findCode("an old body"); c != restarea.CodeUnavailable {
		t.Fatalf("find during the backfill: %q, want unavailable", c)
	}
	total := 0
	for i := 0; ; i++ {
		r := h.apply(fsm.Command{Op: fsm.OpBackfill, Backfill: &fsm.BackfillCommand{MaxItems: 2}})
		if r.Err != nil || r.Backfilled > 2 {
			t.Fatalf("backfill %d: %+v", i, r)
		}
		total += r.Backfilled
		if !r.BackfillLeft {
			break
		}
		if c := h.findCode("an old body"); c != restarea.CodeUnavailable {
			t.Fatalf("find with a backfill left: %q", c)
		}
	}
	if total != 6 {
		t.Fatalf("backfilled %d entries, want the 6 stored before the raise", total)
	}
	if pending, err := h.f.BackfillPending(); err != nil || pending {
		t.Fatalf("BackfillPending after the last = %v, %v", pending, err)
	}
	want := []string{newID, old[6], old[5], old[4], old[2], old[1], old[0]}
	if got := h.find("an old body", restarea.FindQuery{}); !sameIDs(got, want) {
		t.Fatalf("after the backfill: %v, want %v", got, want)
	}
	// One more backfill (a leader that had not seen the end) changes nothing.
	if r := h.apply(fsm.Command{Op: fsm.OpBackfill, Backfill: &fsm.BackfillCommand{MaxItems: 2}}); r.Err != nil || r.Backfilled != 0 || r.BackfillLeft {
		t.Fatalf("a backfill after the end: %+v", r)
	}
	// The state survives a reopen, as the backfill position would have.
	h.f.Close()
	h.f = openFSM(t, h.path)
	if got := h.find("an old body", restarea.FindQuery{}); !sameIDs(got, want) {
		t.Fatalf("reopened: %v", got)
	}
}

// A board with nothing stored when version 4 arrives has nothing to
// backfill: finds answer at once.
func TestNoBackfillOnAnEmptyBoard(t *testing.T) {
	h := newHarness(t)
	h.raiseTo(4)
	if pending, err := h.f.BackfillPending(); err != nil || pending {
		t.Fatalf("BackfillPending = %v, %v", pending, err)
	}
	if c := h.findCode("anything"); c != "" {
		t.Fatalf("find: %q", c)
	}
}

// The query's own checks name the field.
func TestFindQueryValidate(t *testing.T) {
	for _, c := range []struct {
		q     restarea.FindQuery
		field string
	}{
		{restarea.FindQuery{}, "body"},
		{restarea.FindQuery{Body: strings.Repeat("x", restarea.MaxBody+1)}, "body"},
		{restarea.FindQuery{Body: "\xff"}, "body"},
		{restarea.FindQuery{Body: "b", Type: "answer"}, "type"},
		{restarea.FindQuery{Body: "b", ParentID: "nope"}, "parent_id"},
		{restarea.FindQuery{Body: "b", Type: restarea.TypeQuestion, ParentID: "6f1c1f3e-1111-4a4a-8b8b-123456789abc"}, "parent_id"},
		{restarea.FindQuery{Body: "b", Limit: restarea.MaxFindLimit + 1}, "limit"},
		{restarea.FindQuery{Body: "b", Actor: strings.Repeat("a", restarea.MaxName+1)}, "actor"},
	} {
		_, err := c.q.Validate()
		if restarea.ErrorCode(err) != restarea.CodeInvalidRequest || !strings.HasPrefix(restarea.ErrorMessage(err), c.field+" ") {
			t.Errorf("%+v: %v, want invalid_request naming %s", c.q, err, c.field)
		}
	}
}
