package fsm_test

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/restarea/restarea/fsm"
)

// A duplicate later in the same batch sees the earlier one.
func TestApplyBatchDuplicate(t *testing.T) {
	h := newHarness(t)
	q := question(t, "q")
	rs := h.batch(postCmd(q, "a", "att-1"), postCmd(q, "b", "att-2"), postCmd(q, "a", "att-1"))
	if status(rs[0]) != 201 || status(rs[1]) != 200 || status(rs[2]) != 201 {
		t.Fatalf("statuses %d %d %d, want 201 200 201", status(rs[0]), status(rs[1]), status(rs[2]))
	}
	for i, r := range rs[1:] {
		if r.Entry.ID != rs[0].Entry.ID {
			t.Errorf("result %d: id %s, want %s", i+1, r.Entry.ID, rs[0].Entry.ID)
		}
	}
	for i, r := range rs {
		if r.Index != uint64(i+1) {
			t.Errorf("result %d: Index %d, want %d", i, r.Index, i+1)
		}
	}
	if n := h.count(); n != 1 {
		t.Fatalf("Count() = %d, want 1", n)
	}
	if got := h.f.AppliedIndex(); got != 3 {
		t.Fatalf("AppliedIndex() = %d, want 3", got)
	}
}

// Log entries that are not commands advance the applied index and answer nil.
func TestApplyBatchNonCommand(t *testing.T) {
	h := newHarness(t)
	out := h.f.ApplyBatch([]*raft.Log{
		{Index: 1, Type: raft.LogConfiguration},
		{Index: 2, Type: raft.LogCommand, Data: h.encode(postCmd(question(t, "q"), "a", "x"))},
		{Index: 3, Type: raft.LogNoop},
	})
	if out[0] != nil || out[2] != nil {
		t.Errorf("non-command results %v %v, want nil", out[0], out[2])
	}
	if r := asResult(t, out[1]); status(r) != 201 {
		t.Errorf("post: %d, want 201", status(r))
	}
	if got := h.f.AppliedIndex(); got != 3 {
		t.Fatalf("AppliedIndex() = %d, want 3", got)
	}
}

// Undecodable or incomplete commands are refused, never fatal.
func TestApplyMalformedCommand(t *testing.T) {
	h := newHarness(t)
	for i, data := range [][]byte{nil, []byte("{}"), {1, '{'}, {1, '{', '}'}, {9, '{', '}'}} {
		r := asResult(t, h.f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data}))
		if r.Err == nil {
			t.Errorf("data %q: accepted", data)
		}
	}
	h.index = 5
	noID := postCmd(question(t, "q"), "a", "x")
	noID.Post.NewID = ""
	noRequestID := postCmd(question(t, "q"), "a", "x")
	noRequestID.Post.Request.RequestID = ""
	for _, c := range []fsm.Command{{Op: fsm.OpPost}, noID, noRequestID, {Op: fsm.OpSettings}, {Op: fsm.OpExpire}, {Op: "nonsense"}} {
		if r := h.apply(c); r.Err == nil {
			t.Errorf("%s without arguments: accepted", c.Op)
		}
	}
	if n := h.count(); n != 0 {
		t.Fatalf("Count() = %d, want 0", n)
	}
}

// The clock never goes back: a command with an earlier Time than the last
// applied one is stamped no earlier than its predecessor.
func TestClockNeverGoesBack(t *testing.T) {
	h := newHarness(t)
	first := h.post(question(t, "q1"), "a", "x")
	c := postCmd(question(t, "q2"), "a", "y")
	c.Time = h.now - int64(time.Hour)
	second := h.apply(c)
	if second.Entry.CreatedAt.Before(first.Entry.CreatedAt) {
		t.Fatalf("created_at %v before the previous %v", second.Entry.CreatedAt, first.Entry.CreatedAt)
	}
	h.advance(time.Minute)
	third := h.post(question(t, "q3"), "a", "z")
	if want := time.Unix(0, h.now).UTC(); !third.Entry.CreatedAt.Equal(want) {
		t.Fatalf("created_at %v, want the command time %v", third.Entry.CreatedAt, want)
	}
	page, err := h.f.Threads("", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(page.Threads); i++ {
		if page.Threads[i].CreatedAt.After(page.Threads[i-1].CreatedAt) {
			t.Errorf("thread %d is newer than thread %d in a newest-first list", i, i-1)
		}
	}
}
