package fsm_test

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	bolt "go.etcd.io/bbolt"
)

// populate gives h a little of everything: questions, replies, a hidden
// entry, a deleted entry, settings.
func populate(t *testing.T, h *harness) {
	t.Helper()
	var qids []string
	for i := 0; i < 5; i++ {
		qids = append(qids, h.create(question(t, "q")))
	}
	for i := 0; i < 9; i++ {
		h.create(reply(t, qids[i%3], "answer"))
	}
	h.admin(fsm.OpHide, qids[1])
	h.admin(fsm.OpDelete, qids[2])
	h.mustSettings(restarea.SettingsPatch{PerSourceLimit: &restarea.Limit{Count: 9, WindowSeconds: 9}})
}

// Restarting on the same file keeps the applied index, and log entries at
// or below it are not applied again.
func TestRestart(t *testing.T) {
	h := newHarness(t)
	populate(t, h)
	n := h.index
	before := dump(t, h.f)
	if err := h.f.Close(); err != nil {
		t.Fatal(err)
	}
	h.f = openFSM(t, h.path)
	if got := h.f.AppliedIndex(); got != n {
		t.Fatalf("AppliedIndex() after reopen = %d, want %d", got, n)
	}
	if after := dump(t, h.f); after != before {
		t.Fatalf("state changed across a restart:\n%s\nwant\n%s", after, before)
	}

	// Old indexes, even with other data, change nothing and answer nil.
	for _, idx := range []uint64{1, n - 1, n} {
		data := h.encode(postCmd(question(t, "late"), "a", "x"))
		if out := h.f.Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: data}); out != nil {
			t.Errorf("index %d: answered %v, want nil", idx, out)
		}
	}
	out := h.f.ApplyBatch([]*raft.Log{
		{Index: n - 1, Type: raft.LogCommand, Data: h.encode(postCmd(question(t, "late"), "a", "x"))},
		{Index: n, Type: raft.LogCommand, Data: h.encode(postCmd(question(t, "late"), "a", "x"))},
	})
	if out[0] != nil || out[1] != nil {
		t.Errorf("old batch answered %v, want nils", out)
	}
	if after := dump(t, h.f); after != before {
		t.Fatalf("re-applied old indexes changed the state")
	}

	// A batch that spans the applied index applies only the new part.
	out = h.f.ApplyBatch([]*raft.Log{
		{Index: n, Type: raft.LogCommand, Data: h.encode(postCmd(question(t, "late"), "a", "x"))},
		{Index: n + 1, Type: raft.LogCommand, Data: h.encode(postCmd(question(t, "next"), "a", "x"))},
	})
	if out[0] != nil {
		t.Errorf("index n in a spanning batch answered %v, want nil", out[0])
	}
	r := asResult(t, out[1])
	if status(r) != 201 || r.Index != n+1 {
		t.Fatalf("index n+1: status %d index %d, want 201 at %d", status(r), r.Index, n+1)
	}
	if got := h.count(); got != 13+1 {
		t.Fatalf("Count() = %d, want 14", got)
	}
	if got := h.f.AppliedIndex(); got != n+1 {
		t.Fatalf("AppliedIndex() = %d, want %d", got, n+1)
	}
}

func snapshotBytes(t *testing.T, f *fsm.FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("sink closed %v cancelled %v, want closed only", sink.closed, sink.cancelled)
	}
	return sink.Bytes()
}

func TestSnapshotRestore(t *testing.T) {
	h := newHarness(t)
	populate(t, h)
	snap := snapshotBytes(t, h.f)
	// Writes after the snapshot are not in it.
	h.create(question(t, "after the snapshot"))
	want := dump(t, h.f)

	g := newHarness(t)
	if err := g.f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, h.f)))); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if got := dump(t, g.f); got != want {
		t.Fatalf("restored state differs:\n%s\nwant\n%s", got, want)
	}

	// Restoring an older snapshot over a newer state replaces it.
	if err := g.f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if got := g.f.AppliedIndex(); got != h.index-1 {
		t.Fatalf("AppliedIndex() = %d, want %d", got, h.index-1)
	}
	if got, _ := g.f.Count(); got != 13 {
		t.Fatalf("Count() = %d, want 13", got)
	}

	// WriteTo makes the same kind of stream.
	var backup bytes.Buffer
	if _, err := h.f.WriteTo(&backup); err != nil {
		t.Fatal(err)
	}
	if err := g.f.Restore(io.NopCloser(&backup)); err != nil {
		t.Fatalf("restore backup: %v", err)
	}
	if got := dump(t, g.f); got != want {
		t.Fatalf("restored backup differs")
	}
	// The restored state keeps applying.
	g.index = g.f.AppliedIndex()
	if r := g.post(question(t, "x"), "a", "x"); status(r) != 201 {
		t.Fatalf("post after restore: %d", status(r))
	}
}

// Reads may run while a snapshot is being persisted and commands applied.
func TestSnapshotWhileApplying(t *testing.T) {
	h := newHarness(t)
	populate(t, h)
	want := dump(t, h.f)
	snap, err := h.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	for i := 0; i < 20; i++ {
		h.create(question(t, "during"))
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	g := newHarness(t)
	if err := g.f.Restore(io.NopCloser(&sink.Buffer)); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, g.f); got != want {
		t.Fatalf("snapshot is not the state at Snapshot():\n%s\nwant\n%s", got, want)
	}
}

func TestRestoreRefusesBadStream(t *testing.T) {
	src := newHarness(t)
	populate(t, src)
	good := snapshotBytes(t, src.f)
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"garbage", bytes.Repeat([]byte("not a database "), 1000)},
		{"first page only", good[:4096]},
		{"one and a half pages", good[:6000]},
		{"truncated in half", good[:len(good)/2]},
		{"last page missing", good[:len(good)-4096]},
		{"one byte short", good[:len(good)-1]},
		{"foreign bolt file", foreignBolt(t)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.create(question(t, "mine"))
			want := dump(t, h.f)
			if err := h.f.Restore(io.NopCloser(bytes.NewReader(tc.data))); err == nil {
				t.Fatal("restore accepted a bad stream")
			}
			if got := dump(t, h.f); got != want {
				t.Fatalf("state changed by a refused restore")
			}
			if r := h.post(question(t, "still works"), "a", "x"); status(r) != 201 {
				t.Fatalf("post after refused restore: %d", status(r))
			}
		})
	}
}

// foreignBolt returns a valid bbolt file without the fsm's buckets.
func foreignBolt(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "other.db")
	return boltFileWithBucket(t, path, "something_else")
}

func boltFileWithBucket(t *testing.T, path, bucket string) []byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var buf bytes.Buffer
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucket([]byte(bucket)); err != nil {
			return err
		}
		return nil
	})
	if err == nil {
		err = db.View(func(tx *bolt.Tx) error {
			_, err := tx.WriteTo(&buf)
			return err
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
