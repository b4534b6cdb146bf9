package fsm_test

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea/fsm"
)

// groupHarness is a harness whose batches share state-file transactions
// for up to every.
func groupHarness(t testing.TB, every time.Duration) *harness {
	t.Helper()
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "state.db"), now: t0}
	f, err := fsm.Open(h.path, fsm.Options{CommitEvery: every})
	if err != nil {
		t.Fatal(err)
	}
	h.f = f
	t.Cleanup(func() { h.f.Close() })
	return h
}

// postLogs returns n post logs at the harness's next indexes.
func postLogs(t *testing.T, h *harness, n int) []*raft.Log {
	logs := make([]*raft.Log, n)
	for i := range logs {
		h.index++
		q := question(t, fmt.Sprintf("grouped %d", h.index))
		logs[i] = &raft.Log{Index: h.index, Type: raft.LogCommand, Data: h.encode(postCmd(q, fmt.Sprintf("10.1.0.%d", i%200+1), "a"))}
	}
	return logs
}

func results(t *testing.T, out []interface{}) []*fsm.Result {
	t.Helper()
	rs := make([]*fsm.Result, len(out))
	for i, o := range out {
		rs[i] = asResult(t, o)
		if rs[i].Err != nil || rs[i].Entry == nil {
			t.Fatalf("result %d: %+v", i, rs[i])
		}
	}
	return rs
}

// reopen abandons the FSM the way a crashed process leaves it and opens
// its file again.
func (h *harness) reopen(opts fsm.Options) {
	h.t.Helper()
	if err := h.f.Abandon(); err != nil {
		h.t.Fatal(err)
	}
	f, err := fsm.Open(h.path, opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.f = f
}

// Batches applied into an open group are answered at once, and a read
// right after sees them all, although nothing timed has committed them.
func TestGroupReadsSeeEveryAppliedBatch(t *testing.T) {
	h := groupHarness(t, time.Hour)
	for b := 0; b < 5; b++ {
		results(t, h.f.ApplyBatch(postLogs(t, h, 3)))
		if n, err := h.f.Count(); err != nil || n != uint64(3*(b+1)) {
			t.Fatalf("after batch %d: count %d (%v)", b, n, err)
		}
	}
	if got := h.f.AppliedIndex(); got != h.index {
		t.Fatalf("applied %d, want %d", got, h.index)
	}
}

// A process that dies with a group open loses only that group, and the
// log applied again onto the file (as raft does on start) gives the same
// state and the same answers: the file's applied index is committed with
// the changes.
func TestGroupLostInACrashIsAppliedAgain(t *testing.T) {
	h := groupHarness(t, time.Hour)
	results(t, h.f.ApplyBatch(postLogs(t, h, 4)))
	if n, _ := h.f.Count(); n != 4 { // the read commits the group
		t.Fatalf("count %d", n)
	}
	committed := h.index
	open := postLogs(t, h, 6)
	answered := results(t, h.f.ApplyBatch(open))
	h.reopen(fsm.Options{CommitEvery: time.Hour})
	if got := h.f.AppliedIndex(); got != committed {
		t.Fatalf("after the crash: applied %d, want %d (the committed group)", got, committed)
	}
	// Raft applies everything after the snapshot again; what the file
	// holds is skipped.
	all := append([]*raft.Log{}, open...)
	again := results(t, h.f.ApplyBatch(all))
	for i := range again {
		if again[i].Entry.ID != answered[i].Entry.ID || again[i].Replayed != answered[i].Replayed {
			t.Fatalf("entry %d applied again: %+v, first answered %+v", i, again[i].Entry, answered[i].Entry)
		}
	}
	if n, _ := h.f.Count(); n != 10 {
		t.Fatalf("count %d, want 10", n)
	}
}

// Without reads, the group commits by itself within CommitEvery.
func TestGroupCommitsByItself(t *testing.T) {
	h := groupHarness(t, 20*time.Millisecond)
	results(t, h.f.ApplyBatch(postLogs(t, h, 5)))
	// Wait for the timer's commit itself (a read would commit first).
	for deadline := time.Now().Add(time.Minute); h.f.GroupPending(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the group was not committed by its timer")
		}
	}
	h.reopen(fsm.Options{})
	if got := h.f.AppliedIndex(); got != h.index {
		t.Fatalf("after the timer and a crash: applied %d, want %d", got, h.index)
	}
}

// Close commits the open group.
func TestGroupCommittedOnClose(t *testing.T) {
	h := groupHarness(t, time.Hour)
	results(t, h.f.ApplyBatch(postLogs(t, h, 5)))
	if err := h.f.Close(); err != nil {
		t.Fatal(err)
	}
	if idx, err := fsm.CheckStateFile(h.path); err != nil || idx != h.index {
		t.Fatalf("closed file: applied %d (%v), want %d", idx, err, h.index)
	}
	h.f = openFSM(t, h.path)
}

// A snapshot holds every batch applied before it (raft records it at the
// last index it handed over), and so does a backup.
func TestGroupSnapshotAndBackupHoldEveryAppliedBatch(t *testing.T) {
	h := groupHarness(t, time.Hour)
	results(t, h.f.ApplyBatch(postLogs(t, h, 7)))
	snap := snapshotBytes(t, h.f)
	results(t, h.f.ApplyBatch(postLogs(t, h, 2)))
	var backup bytes.Buffer
	if _, err := h.f.WriteTo(&backup); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		b     []byte
		count uint64
	}{{"snapshot", snap, 7}, {"backup", backup.Bytes(), 9}} {
		g := newHarness(t)
		if err := g.f.Restore(io.NopCloser(bytes.NewReader(c.b))); err != nil {
			t.Fatal(err)
		}
		if n, _ := g.f.Count(); n != c.count {
			t.Fatalf("%s restored: count %d, want %d", c.name, n, c.count)
		}
	}
}

// Restore drops an open group: the snapshot replaces all of it.
func TestGroupDroppedByRestore(t *testing.T) {
	empty := newHarness(t)
	snap := snapshotBytes(t, empty.f)
	h := groupHarness(t, time.Hour)
	results(t, h.f.ApplyBatch(postLogs(t, h, 3)))
	if err := h.f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	if n, _ := h.f.Count(); n != 0 || h.f.AppliedIndex() != 0 {
		t.Fatalf("after restore: count %d, applied %d", n, h.f.AppliedIndex())
	}
	if err := h.f.Close(); err != nil {
		t.Fatal(err)
	}
	if idx, err := fsm.CheckStateFile(h.path); err != nil || idx != 0 {
		t.Fatalf("closed file: applied %d (%v), want 0", idx, err)
	}
	h.f = openFSM(t, h.path)
}
