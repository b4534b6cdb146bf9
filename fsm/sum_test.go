package fsm_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/testkit"
	bolt "go.etcd.io/bbolt"
)

// rawValue returns the bytes stored under k in bucket of the (closed)
// state file at path, or nil.
func rawValue(t *testing.T, path, bucket string, k []byte) []byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v []byte
	db.View(func(tx *bolt.Tx) error {
		v = bytes.Clone(tx.Bucket([]byte(bucket)).Get(k))
		return nil
	})
	return v
}

// entrySeq is the sequence number (the entries bucket's key) of entry id.
func entrySeq(t *testing.T, path, id string) []byte {
	t.Helper()
	v := rawValue(t, path, "ids", []byte(id))
	return v[len(v)-8:]
}

// halts collects what a reopened FSM reports to Options.OnHalt.
type halts struct {
	mu   sync.Mutex
	errs []error
}

func (h *halts) onHalt(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errs = append(h.errs, err)
}

// corrupt returns the one halt reported, which must be a *CorruptError.
func (h *halts) corrupt(t *testing.T) *fsm.CorruptError {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	var c *fsm.CorruptError
	if len(h.errs) != 1 || !errors.As(h.errs[0], &c) {
		t.Fatalf("halts %v, want one *fsm.CorruptError", h.errs)
	}
	return c
}

// raiseTo3 finalizes the upgrade to the cluster version of checksums.
func (h *harness) raiseTo3() {
	h.t.Helper()
	for _, v := range []int{2, 3} {
		if r := h.apply(fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: v}); r.Err != nil {
			h.t.Fatalf("cluster version %d: %+v", v, r.Err)
		}
	}
}

// Values written before cluster version 3 carry no checksum and still
// read; from version 3 every new value carries one, and both kinds read.
func TestChecksumsFromClusterVersion3(t *testing.T) {
	h := newHarness(t)
	oldReq := question(t, "written at cluster version 1")
	oldID := h.create(oldReq)
	h.raiseTo3()
	newReq := question(t, "written at cluster version 3")
	newID := h.create(newReq)
	if err := h.f.Close(); err != nil {
		t.Fatal(err)
	}

	oldRec := rawValue(t, h.path, "entries", entrySeq(t, h.path, oldID))
	newRec := rawValue(t, h.path, "entries", entrySeq(t, h.path, newID))
	if oldRec[0] != '{' {
		t.Fatalf("record written at version 1 starts %q, want bare JSON", oldRec[:8])
	}
	if newRec[0] != 0xfe || newRec[5] != '{' {
		t.Fatalf("record written at version 3 starts %x, want the checksum header then JSON", newRec[:8])
	}
	if got := fsm.Checksum(append(append([]byte("entries"), entrySeq(t, h.path, newID)...), newRec[5:]...)); got != uint32(newRec[1])<<24|uint32(newRec[2])<<16|uint32(newRec[3])<<8|uint32(newRec[4]) {
		t.Fatalf("stored checksum %x is not the CRC-32C of bucket, key and payload (%08x)", newRec[1:5], got)
	}
	for bucket, k := range map[string][]byte{
		"by_request": []byte(newReq.RequestID),
		"threads":    entrySeq(t, h.path, newID),
		"meta":       []byte("applied_index"),
	} {
		if v := rawValue(t, h.path, bucket, k); len(v) < 5 || v[0] != 0xfe {
			t.Fatalf("%s/%x = %x, want a checksum header", bucket, k, v)
		}
	}
	if v := rawValue(t, h.path, "by_request", []byte(oldReq.RequestID)); len(v) != 8 {
		t.Fatalf("by_request of the old entry = %x, want the bare 8 bytes it was written with", v)
	}

	var hs halts
	h.reopen(fsm.Options{OnHalt: hs.onHalt})
	for _, id := range []string{oldID, newID} {
		if _, err := h.f.Thread(id); err != nil {
			t.Fatalf("Thread(%s): %v", id, err)
		}
	}
	for _, req := range []restarea.PostRequest{oldReq, newReq} {
		if r := h.post(req, "192.0.2.9", "replay"); r.Err != nil || !r.Replayed {
			t.Fatalf("replay of %q: %+v", req.Title, r)
		}
	}
	if err := h.f.Halted(); err != nil {
		t.Fatalf("halted: %v", err)
	}
}

// The scenario: a byte of a stored question's body flips on the
// disk of a stopped node. Reading it, or replaying the original post,
// gives an error and never the changed text, and the state machine stops
// with a CorruptError naming the state file and the record.
func TestRotInRecordStopsReadsAndReplays(t *testing.T) {
	h := newHarness(t)
	h.raiseTo3()
	req := question(t, "a question whose body rots")
	req.Body = "The original text of the question, which must never change."
	id := h.create(req)
	h.create(question(t, "a neighbour"))
	if err := h.f.Close(); err != nil {
		t.Fatal(err)
	}
	seq := entrySeq(t, h.path, id)
	testkit.Rot(t, h.path, []byte("original text"), 0) // 'o' → 'n': "nriginal"
	wantWhere := "entries/" + hexOf(seq)

	t.Run("read", func(t *testing.T) {
		var hs halts
		h.reopen(fsm.Options{OnHalt: hs.onHalt})
		_, err := h.f.Thread(id)
		if restarea.ErrorCode(err) != restarea.CodeUnavailable {
			t.Fatalf("Thread of the rotten question: %v, want unavailable", err)
		}
		if strings.Contains(err.Error(), "nriginal") {
			t.Fatalf("the error carries the changed text: %v", err)
		}
		if c := hs.corrupt(t); c.File != "state.db" || c.Where != wantWhere || c.Want == c.Got {
			t.Fatalf("halt %+v, want state.db at %s", c, wantWhere)
		}
		if _, _, err := h.f.Entry(id); err == nil {
			t.Fatal("Entry of the rotten question: no error")
		}
		// Nothing more is applied once stopped.
		before := h.f.AppliedIndex()
		h.index++
		if out := h.f.ApplyBatch([]*raft.Log{{Index: h.index, Type: raft.LogCommand, Data: h.encode(postCmd(question(t, "later"), "192.0.2.3", "x"))}}); out[0] != nil || h.f.AppliedIndex() != before {
			t.Fatalf("applied after the stop: %+v", out[0])
		}
		h.index--
	})
	t.Run("replay", func(t *testing.T) {
		var hs halts
		h.reopen(fsm.Options{OnHalt: hs.onHalt})
		before := h.f.AppliedIndex()
		h.index++
		out := h.f.ApplyBatch([]*raft.Log{{Index: h.index, Type: raft.LogCommand, Data: h.encode(postCmd(req, "192.0.2.4", "replay"))}})
		if out[0] != nil {
			t.Fatalf("the replay of the rotten question answered %+v (a 409 is what the issue saw), want no answer", out[0])
		}
		c := hs.corrupt(t)
		if c.File != "state.db" || c.Where != wantWhere || c.Index != h.index {
			t.Fatalf("halt %+v, want state.db at %s, log index %d", c, wantWhere, h.index)
		}
		if h.f.AppliedIndex() != before {
			t.Fatalf("applied index %d after the stop, want %d: nothing of the replay is kept", h.f.AppliedIndex(), before)
		}
	})
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&0xf])
	}
	return string(out)
}

// A flip in an index value (by_request: request id → sequence number) is
// caught when a replay reads it, whether it hits the number or the
// checksum's marker byte.
func TestRotInIndexCaughtByReplay(t *testing.T) {
	for name, at := range map[string]int{"number": 12, "marker": 0} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.raiseTo3()
			req := question(t, "its request id's index entry rots")
			h.create(req)
			if err := h.f.Close(); err != nil {
				t.Fatal(err)
			}
			stored := rawValue(t, h.path, "by_request", []byte(req.RequestID))
			// In a page a key is followed by its value.
			testkit.Rot(t, h.path, append([]byte(req.RequestID), stored...), len(req.RequestID)+at)
			var hs halts
			h.reopen(fsm.Options{OnHalt: hs.onHalt})
			h.index++
			out := h.f.ApplyBatch([]*raft.Log{{Index: h.index, Type: raft.LogCommand, Data: h.encode(postCmd(req, "192.0.2.4", "replay"))}})
			if out[0] != nil {
				t.Fatalf("replay answered %+v, want no answer", out[0])
			}
			if c := hs.corrupt(t); c.File != "state.db" || !strings.HasPrefix(c.Where, "by_request/"+req.RequestID) {
				t.Fatalf("halt %+v, want state.db at by_request/%s", c, req.RequestID)
			}
		})
	}
}

// The scrub checks every value, so it finds a flip in a record nobody
// reads, and stops the state machine; on an intact file it completes its
// passes, counting checked and bare values.
func TestScrubFindsRotNobodyReads(t *testing.T) {
	h := newHarness(t)
	h.create(question(t, "written before checksums"))
	h.raiseTo3()
	req := question(t, "an old question nobody reads")
	req.Body = "Forgotten, but still on the disk."
	h.create(req)
	for i := range 20 {
		h.create(question(t, "filler "+string(rune('a'+i))))
	}

	passes := make(chan fsm.ScrubPass, 8)
	var checked int
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- h.f.Scrub(ctx, fsm.ScrubOptions{Rate: 1 << 30, Every: time.Millisecond,
			Checked: func(n int) { mu.Lock(); checked += n; mu.Unlock() },
			Passed:  func(p fsm.ScrubPass) { passes <- p }})
	}()
	var p fsm.ScrubPass
	for range 2 {
		select {
		case p = <-passes:
		case err := <-done:
			t.Fatalf("scrub of an intact file ended: %v", err)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("scrub ended with %v, want context.Canceled", err)
	}
	// 21 entries at version 3, each with ids, by_request, expiry,
	// threads and global values; the first entry's are bare.
	if p.Checked < 21*6 || p.Bare < 6 || p.Bytes == 0 {
		t.Fatalf("a pass %+v: want at least %d checked values and some bare ones", p, 21*6)
	}
	mu.Lock()
	if checked < 2*p.Checked {
		t.Fatalf("Checked told %d values over two passes of %d", checked, p.Checked)
	}
	mu.Unlock()

	if err := h.f.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.Rot(t, h.path, []byte("Forgotten"), 3)
	var hs halts
	h.reopen(fsm.Options{OnHalt: hs.onHalt})
	err := h.f.Scrub(context.Background(), fsm.ScrubOptions{Rate: 1 << 30, Every: time.Hour})
	var c *fsm.CorruptError
	if !errors.As(err, &c) || c.File != "state.db" || !strings.HasPrefix(c.Where, "entries/") {
		t.Fatalf("scrub of a rotten file: %v, want a CorruptError in entries", err)
	}
	if hs.corrupt(t) != c {
		t.Fatal("the scrub's error is not the one the state machine stopped with")
	}
}
