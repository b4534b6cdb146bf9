//go:build linux

package fsm_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea/fsm"
)

// tmpfsHarness is a harness whose state file is on a small tmpfs, with
// opts; it skips where mounting is not allowed.
func tmpfsHarness(t *testing.T, opts fsm.Options) (*harness, string) {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=4m,mode=0750"); err != nil {
		t.Skipf("SKIP: cannot mount a tmpfs to fill (%v): this test needs root or CAP_SYS_ADMIN (CI runs as root)", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	h := &harness{t: t, path: filepath.Join(dir, "state.db"), now: t0}
	opts.Logger = slog.New(slog.DiscardHandler)
	f, err := fsm.Open(h.path, opts)
	if err != nil {
		t.Fatal(err)
	}
	h.f = f
	t.Cleanup(func() { h.f.Close() })
	return h, dir
}

func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, chunk := range []int{256 << 10, 4 << 10, 512} {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
	return path
}

// bigBatch is enough posts that their commit needs new pages.
func bigBatch(t *testing.T, h *harness, n int) []*raft.Log {
	logs := make([]*raft.Log, n)
	for i := range logs {
		q := question(t, strings.Repeat("full disk ", 20))
		q.Body = strings.Repeat("a body that takes room. ", 200)
		h.index++
		logs[i] = &raft.Log{Index: h.index, Type: raft.LogCommand, Data: h.encode(postCmd(q, fmt.Sprintf("10.0.%d.1", i), "a"))}
	}
	return logs
}

// freeAndAwait removes the filler and waits for the batch ApplyBatch was
// retrying to apply, each post stored.
func freeAndAwait(t *testing.T, filler string, done <-chan []interface{}) {
	t.Helper()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-done:
		results(t, out)
	case <-time.After(5 * time.Second):
		t.Fatal("the batch did not apply after space was freed")
	}
}

// On a full disk ApplyBatch neither panics nor skips: it retries the same
// batch, reports the stall, keeps the state readable, and applies the
// batch exactly once when space returns.
func TestApplyBatchRetriesOnFullDisk(t *testing.T) {
	h, dir := tmpfsHarness(t, fsm.Options{})
	h.create(question(t, "before"))
	before := h.f.AppliedIndex()
	filler := fillDisk(t, dir)
	logs := bigBatch(t, h, 40)
	done := make(chan []interface{}, 1)
	go func() { done <- h.f.ApplyBatch(logs) }()

	deadline := time.Now().Add(5 * time.Second)
	for h.f.Stalled() == nil {
		if time.Now().After(deadline) {
			select {
			case <-done:
				t.Fatal("the batch applied on a full disk: fill more")
			default:
			}
			t.Fatal("no stall reported")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s := h.f.Stalled()
	if !s.DiskFull || s.Index != logs[0].Index || !fsm.IsDiskFull(s.Err) {
		t.Fatalf("stall %+v", s)
	}
	if n, err := h.f.Count(); err != nil || n != 1 || h.f.AppliedIndex() != before {
		t.Fatalf("while stalled: count %d (%v), applied %d (want %d)", n, err, h.f.AppliedIndex(), before)
	}
	time.Sleep(100 * time.Millisecond) // a few more attempts
	if h.f.FailedCommits() < 2 {
		t.Fatalf("failed commits %d", h.f.FailedCommits())
	}
	freeAndAwait(t, filler, done)
	if h.f.Stalled() != nil || h.f.AppliedIndex() != logs[len(logs)-1].Index {
		t.Fatalf("after: stall %v, applied %d", h.f.Stalled(), h.f.AppliedIndex())
	}
	if n, _ := h.f.Count(); n != 41 {
		t.Fatalf("count %d, want 41", n)
	}
	// The file is intact: it reopens with the same state.
	if err := h.f.Close(); err != nil {
		t.Fatal(err)
	}
	if idx, err := fsm.CheckStateFile(h.path); err != nil || idx != logs[len(logs)-1].Index {
		t.Fatalf("check: %d %v", idx, err)
	}
	h.f = openFSM(t, h.path)
	if n, _ := h.f.Count(); n != 41 {
		t.Fatalf("reopened count %d", n)
	}
}

// Stop ends the retrying: the batch is left unapplied (the next start
// applies it), nothing half-done is in the file.
func TestApplyBatchStopsRetrying(t *testing.T) {
	stop := make(chan struct{})
	h, dir := tmpfsHarness(t, fsm.Options{Stop: stop})
	h.create(question(t, "before"))
	before := h.f.AppliedIndex()
	fillDisk(t, dir)
	done := make(chan []interface{}, 1)
	go func() { done <- h.f.ApplyBatch(bigBatch(t, h, 40)) }()
	for h.f.Stalled() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	select {
	case out := <-done:
		for _, o := range out {
			if o != nil {
				t.Fatalf("a result from an unapplied batch: %v", o)
			}
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ApplyBatch kept retrying after Stop")
	}
	if h.f.AppliedIndex() != before {
		t.Fatalf("applied %d, want %d", h.f.AppliedIndex(), before)
	}
	if n, _ := h.f.Count(); n != 1 {
		t.Fatalf("count %d", n)
	}
}

// With groups, a commit that fails on a full disk loses nothing that was
// answered: reads see the last committed state meanwhile, the FSM reports
// the stall, the next batch waits in ApplyBatch, and once space returns
// the group is applied again and committed with it, exactly once.
func TestGroupCommitOnFullDisk(t *testing.T) {
	h, dir := tmpfsHarness(t, fsm.Options{CommitEvery: time.Hour})
	h.create(question(t, "before"))
	if n, _ := h.f.Count(); n != 1 {
		t.Fatalf("count %d", n)
	}
	filler := fillDisk(t, dir)
	grouped := bigBatch(t, h, 40)
	results(t, h.f.ApplyBatch(grouped)) // into the open group: no disk write yet
	if err := h.f.Flush(); err == nil || !fsm.IsDiskFull(err) {
		t.Fatalf("flush on a full disk: %v", err)
	}
	if s := h.f.Stalled(); s == nil || !s.DiskFull || s.Index != grouped[0].Index {
		t.Fatalf("stall %+v", s)
	}
	if n, err := h.f.Count(); err != nil || n != 1 {
		t.Fatalf("while stalled: count %d (%v), want the committed 1", n, err)
	}
	next := bigBatch(t, h, 3)
	done := make(chan []interface{}, 1)
	go func() { done <- h.f.ApplyBatch(next) }()
	time.Sleep(100 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("a batch applied past a group that cannot commit")
	default:
	}
	freeAndAwait(t, filler, done)
	if h.f.Stalled() != nil {
		t.Fatalf("still stalled: %+v", h.f.Stalled())
	}
	if n, _ := h.f.Count(); n != 44 {
		t.Fatalf("count %d, want 44", n)
	}
	if err := h.f.Close(); err != nil {
		t.Fatal(err)
	}
	if idx, err := fsm.CheckStateFile(h.path); err != nil || idx != h.index {
		t.Fatalf("check: %d %v", idx, err)
	}
	h.f = openFSM(t, h.path)
	if n, _ := h.f.Count(); n != 44 {
		t.Fatalf("reopened count %d", n)
	}
}
