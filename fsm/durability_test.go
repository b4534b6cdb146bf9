package fsm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/restarea/restarea/fsm"
)

// bootClock is a machine whose boot id a test changes to simulate a
// machine restart.
type bootClock struct{ id string }

func (b *bootClock) get() string { return b.id }

func openUnsynced(t *testing.T, path string, boot *bootClock) *fsm.FSM {
	t.Helper()
	f, err := fsm.Open(path, fsm.Options{Unsynced: true, BootID: boot.get})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return f
}

func applyQuestions(t *testing.T, f *fsm.FSM, from uint64, n int) uint64 {
	t.Helper()
	logs := make([]*raft.Log, n)
	for i := range logs {
		c := postCmd(question(t, "durable"), "10.0.0.1", "a")
		c.Time = t0
		data, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		from++
		logs[i] = &raft.Log{Index: from, Type: raft.LogCommand, Data: data}
	}
	for i, r := range f.ApplyBatch(logs) {
		if res := asResult(t, r); res.Err != nil {
			t.Fatalf("post %d refused: %v", i, res.Err.Message)
		}
	}
	return from
}

// TestUnsyncedStateSurvivesProcessCrash: without fsync, a process that
// dies keeps everything it committed (the page cache has it), so a restart
// on the same boot trusts the file.
func TestUnsyncedStateSurvivesProcessCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	boot := &bootClock{id: "boot-1"}
	f := openUnsynced(t, path, boot)
	if !f.Unsynced() {
		t.Fatal("Unsynced() = false with a boot id")
	}
	idx := applyQuestions(t, f, 0, 10)
	f.Abandon()

	f = openUnsynced(t, path, boot)
	defer f.Close()
	if f.Rebuilt() {
		t.Fatal("a restart on the same boot set the state file aside")
	}
	if f.AppliedIndex() != idx {
		t.Fatalf("AppliedIndex = %d, want %d", f.AppliedIndex(), idx)
	}
	if n, _ := f.Count(); n != 10 {
		t.Fatalf("Count = %d, want 10", n)
	}
}

// TestUnsyncedStateTornByMachineCrash: a state file that was being written
// without fsync when the machine went down is set aside, so the node
// rebuilds it from the snapshot and the log instead of trusting pages that
// may never have reached the disk.
func TestUnsyncedStateTornByMachineCrash(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	boot := &bootClock{id: "boot-1"}
	f := openUnsynced(t, path, boot)
	applyQuestions(t, f, 0, 10)
	f.Abandon()

	boot.id = "boot-2"
	f = openUnsynced(t, path, boot)
	if !f.Rebuilt() {
		t.Fatal("Rebuilt() = false after a machine restart mid-write")
	}
	if f.AppliedIndex() != 0 {
		t.Fatalf("AppliedIndex = %d after the rebuild, want 0", f.AppliedIndex())
	}
	if n, _ := f.Count(); n != 0 {
		t.Fatalf("Count = %d after the rebuild, want 0", n)
	}
	matches, _ := filepath.Glob(path + ".torn-*")
	if len(matches) != 1 {
		t.Fatalf("set-aside files = %v, want one", matches)
	}
	applyQuestions(t, f, 0, 3)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	// A clean close is trusted after any reboot.
	boot.id = "boot-3"
	f = openUnsynced(t, path, boot)
	defer f.Close()
	if f.Rebuilt() {
		t.Fatal("a cleanly closed state file was set aside after a reboot")
	}
	if n, _ := f.Count(); n != 3 {
		t.Fatalf("Count = %d, want 3", n)
	}
}

// TestSyncedModeDropsTheMarker: a node switched to synced commits (or on a
// system without boot ids) must not leave an old marker that would condemn
// its durable file after the next reboot, but must still refuse a file
// left torn by an unsynced run.
func TestSyncedModeDropsTheMarker(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	boot := &bootClock{id: "boot-1"}
	f := openUnsynced(t, path, boot)
	applyQuestions(t, f, 0, 2)
	f.Abandon()

	boot.id = "boot-2"
	s, err := fsm.Open(path, fsm.Options{BootID: boot.get})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Rebuilt() || s.Unsynced() {
		t.Fatalf("synced open of a torn file: Rebuilt=%v Unsynced=%v, want true false", s.Rebuilt(), s.Unsynced())
	}
	applyQuestions(t, s, 0, 1)
	s.Abandon()
	if _, err := os.Stat(path + ".boot"); !os.IsNotExist(err) {
		t.Fatalf("marker still present in synced mode: %v", err)
	}

	boot.id = "boot-3"
	s, err = fsm.Open(path, fsm.Options{BootID: boot.get})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Rebuilt() {
		t.Fatal("a synced file was set aside after a reboot")
	}
	if n, _ := s.Count(); n != 1 {
		t.Fatalf("Count = %d, want 1", n)
	}
}

// TestNoBootIDMeansSynced: where the system publishes no boot id, a crash
// cannot be told from a reboot, so every commit is synced.
func TestNoBootIDMeansSynced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	f, err := fsm.Open(path, fsm.Options{Unsynced: true, BootID: func() string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Unsynced() {
		t.Fatal("Unsynced() = true without a boot id")
	}
	if id := fsm.CurrentBootID(); id != "" && strings.TrimSpace(id) != id {
		t.Fatalf("CurrentBootID not trimmed: %q", id)
	}
}
