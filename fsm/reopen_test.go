//go:build linux

package fsm

import (
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// A Restore that renamed the snapshot into place but could not open it (its
// first commit fails on a full disk) leaves the FSM without a state file.
// The next apply must not stop the process: it opens the file again,
// retrying like a failed commit (Stalled, so the node refuses writes)
// until the file opens, then applies the batch.
func TestApplyAfterAFailedRestoreOpensTheFileAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	f, err := Open(path, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	f.ApplyBatch([]*raft.Log{{Index: 1, Type: raft.LogNoop}})

	// What Restore leaves when f.open fails after the rename: the old
	// handle closed, none in its place.
	f.mu.Lock()
	if err := f.db.Close(); err != nil {
		t.Fatal(err)
	}
	f.db = nil
	f.mu.Unlock()
	// Keep the file from opening for now: bbolt waits for its lock.
	lock, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	done := make(chan []interface{}, 1)
	go func() { done <- f.ApplyBatch([]*raft.Log{{Index: 2, Type: raft.LogNoop}}) }()
	waitUntil(t, "a stall reported", func() bool { return f.Stalled() != nil })
	if s := f.Stalled(); s.Index != 2 || s.Err == nil {
		t.Fatalf("stall %+v", s)
	}
	lock.Close() // the file can open now
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the batch did not apply once the state file could open")
	}
	if f.Stalled() != nil || f.AppliedIndex() != 2 {
		t.Fatalf("after: stall %+v, applied %d", f.Stalled(), f.AppliedIndex())
	}
	if _, err := f.Count(); err != nil {
		t.Fatal(err)
	}
}

// waitUntil polls cond until it holds; the bound only ends a test that
// would otherwise hang.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
