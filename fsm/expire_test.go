package fsm_test

import (
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

const day = 24 * time.Hour

// Expired entries leave every index and their request_id is forgotten.
func TestExpireEntries(t *testing.T) {
	h := newHarness(t)
	oldQ := question(t, "old")
	oldID := h.create(oldQ)
	oldReply := reply(t, oldID, "old answer")
	oldReplyID := h.create(oldReply)
	hiddenID := h.create(question(t, "old hidden"))
	h.admin(fsm.OpHide, hiddenID)
	h.advance(10 * day)
	newID := h.create(question(t, "new"))
	newReplyID := h.create(reply(t, newID, "new answer"))

	h.advance(80*day + time.Second) // old ones are 90 days and a second old
	r := h.expire(90*day, 30*day, 0)
	if r.Err != nil || r.Expired != 3 {
		t.Fatalf("expire: %+v expired %d, want 3", r.Err, r.Expired)
	}
	if n := h.count(); n != 2 {
		t.Fatalf("Count() = %d, want 2", n)
	}
	for _, id := range []string{oldID, hiddenID} {
		if _, err := h.f.Thread(id); restarea.ErrorCode(err) != restarea.CodeNotFound {
			t.Errorf("Thread(%s): %v, want not_found", id, err)
		}
		if _, found, _ := h.f.Entry(id); found {
			t.Errorf("Entry(%s) still found", id)
		}
	}
	if _, err := h.f.Reply(oldReplyID); restarea.ErrorCode(err) != restarea.CodeNotFound {
		t.Errorf("Reply: %v, want not_found", err)
	}
	if _, err := h.f.Replies(oldID, "", 0); restarea.ErrorCode(err) != restarea.CodeNotFound {
		t.Errorf("Replies of an expired question: %v, want not_found", err)
	}
	wantIDs(t, "threads", threadIDs(t, h.f), newID)
	wantIDs(t, "entries", entryIDs(t, h.f), newReplyID, newID)
	page, err := h.f.Replies(newID, "", 0)
	if err != nil || len(page.Replies) != 1 {
		t.Fatalf("replies of the new question: %v %d", err, len(page.Replies))
	}

	// The request_id is forgotten: the same request creates a new entry.
	again := h.post(oldQ, "a", "att-late")
	if status(again) != 201 || again.Entry.ID == oldID {
		t.Fatalf("post of an expired request_id: %d id %v, want 201 with a new id", status(again), again.Entry)
	}
	// Nothing left to expire.
	if r := h.expire(90*day, 30*day, 0); r.Expired != 0 {
		t.Fatalf("second expire removed %d", r.Expired)
	}
}

// A tombstone answers 410 until its own retention ends; then the request_id
// creates a new entry.
func TestExpireTombstones(t *testing.T) {
	h := newHarness(t)
	q := question(t, "q")
	id := h.create(q)
	h.admin(fsm.OpDelete, id)

	h.advance(30 * day)
	if r := h.expire(90*day, 30*day, 0); r.Expired != 0 {
		t.Fatalf("expired %d at exactly the retention, want 0", r.Expired)
	}
	if r := h.post(q, "a", "x"); code(r) != restarea.CodeDeleted {
		t.Fatalf("replay before the tombstone expired: %q, want deleted", code(r))
	}
	h.advance(time.Second)
	if r := h.expire(90*day, 30*day, 0); r.Expired != 1 {
		t.Fatalf("expired %d, want the tombstone", r.Expired)
	}
	r := h.post(q, "a", "y")
	if status(r) != 201 || r.Entry.ID == id {
		t.Fatalf("post after the tombstone expired: %d %v, want 201 with a new id", status(r), r.Entry)
	}
	// The old id is gone for good: deleting it again is not found.
	if r := h.admin(fsm.OpDelete, id); code(r) != restarea.CodeNotFound {
		t.Fatalf("delete of the expired tombstone's id: %q, want not_found", code(r))
	}
}

func TestExpireMaxItems(t *testing.T) {
	tests := []struct {
		name    string
		entries int
		tombs   int
		max     int
		want    []int // Expired of successive commands
	}{
		{name: "entries in chunks", entries: 7, max: 3, want: []int{3, 3, 1, 0}},
		{name: "tombstones in chunks", tombs: 5, max: 2, want: []int{2, 2, 1, 0}},
		{name: "both bounded separately", entries: 3, tombs: 3, max: 2, want: []int{4, 2, 0}},
		{name: "zero means a default", entries: 5, max: 0, want: []int{5, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			for i := 0; i < tc.tombs; i++ {
				h.admin(fsm.OpDelete, h.create(question(t, "deleted")))
			}
			for i := 0; i < tc.entries; i++ {
				h.create(question(t, "old"))
			}
			h.advance(100 * day)
			for i, want := range tc.want {
				if r := h.expire(90*day, 30*day, tc.max); r.Expired != want {
					t.Fatalf("command %d expired %d, want %d", i, r.Expired, want)
				}
			}
			if n := h.count(); n != 0 {
				t.Fatalf("Count() = %d, want 0", n)
			}
		})
	}
}

// Retention 0 keeps entries, and expire also forgets idle sources.
func TestExpireZeroRetentionKeepsEverything(t *testing.T) {
	h := newHarness(t)
	h.admin(fsm.OpDelete, h.create(question(t, "deleted")))
	h.create(question(t, "kept"))
	h.advance(1000 * day)
	if r := h.expire(0, 0, 0); r.Err != nil || r.Expired != 0 {
		t.Fatalf("expire with no retention: %+v %d", r.Err, r.Expired)
	}
	if n := h.count(); n != 1 {
		t.Fatalf("Count() = %d, want 1", n)
	}
}

func threadIDs(t *testing.T, f *fsm.FSM) []string {
	t.Helper()
	return ids(walk(t, func(c string) ([]restarea.Entry, *string, error) {
		p, err := f.Threads(c, 0)
		return p.Threads, p.NextCursor, err
	}))
}

func entryIDs(t *testing.T, f *fsm.FSM) []string {
	t.Helper()
	return ids(walk(t, func(c string) ([]restarea.Entry, *string, error) {
		p, err := f.Entries(c, 0)
		return p.Entries, p.NextCursor, err
	}))
}

func ids(es []restarea.Entry) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func wantIDs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %v, want %v", what, got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: %v, want %v", what, got, want)
			return
		}
	}
}
