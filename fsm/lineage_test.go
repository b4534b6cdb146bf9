package fsm_test

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/restarea/restarea/fsm"
)

// A lineage set on one state file survives a reopen, travels in a
// snapshot to another node's state, and is readable without opening the
// file for writing.
func TestLineageTravelsInSnapshots(t *testing.T) {
	h := newHarness(t)
	if l, p := h.f.Lineage(); l != ([16]byte{}) || p != ([16]byte{}) {
		t.Fatalf("a new state's lineage: %x %x", l, p)
	}
	h.create(question(t, "before the recovery"))
	lineage, parent := [16]byte{1, 2, 3}, [16]byte{9}
	if err := h.f.SetLineage([16]byte{}, parent); err == nil {
		t.Fatal("the zero lineage was set")
	}
	if err := h.f.SetLineage(lineage, parent); err != nil {
		t.Fatal(err)
	}
	if l, p := h.f.Lineage(); l != lineage || p != parent {
		t.Fatalf("lineage %x %x", l, p)
	}

	g := newHarness(t)
	if err := g.f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, h.f)))); err != nil {
		t.Fatal(err)
	}
	if l, p := g.f.Lineage(); l != lineage || p != parent {
		t.Fatalf("restored lineage %x %x", l, p)
	}

	path := filepath.Join(t.TempDir(), "state.db")
	f := openFSM(t, path)
	if err := f.SetLineage(lineage, parent); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if l, p, err := fsm.ReadLineage(path); err != nil || l != lineage || p != parent {
		t.Fatalf("ReadLineage: %x %x %v", l, p, err)
	}
	f = openFSM(t, path)
	defer f.Close()
	if l, _ := f.Lineage(); l != lineage {
		t.Fatalf("reopened lineage %x", l)
	}
}
