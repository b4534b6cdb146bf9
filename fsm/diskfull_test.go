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
	out := await(t, "the batch did not apply after space was freed", done)
	results(t, out)
}

// awaitBound only ends a test that would otherwise hang: the tests wait
// for conditions, and a loaded machine (go test -race ./... on two busy
// cores) takes seconds where an idle one takes milliseconds.
const awaitBound = time.Minute

// await waits for ApplyBatch's results from done.
func await(t *testing.T, failure string, done <-chan []interface{}) []interface{} {
	t.Helper()
	select {
	case out := <-done:
		return out
	case <-time.After(awaitBound):
		t.Fatal(failure)
		return nil
	}
}

// stalled waits until h's FSM reports a stall with at least attempts
// failed commits in all.
func stalled(t *testing.T, h *harness, attempts uint64, done <-chan []interface{}) *fsm.Stall {
	t.Helper()
	for deadline := time.Now().Add(awaitBound); h.f.Stalled() == nil || h.f.FailedCommits() < attempts; time.Sleep(5 * time.Millisecond) {
		select {
		case <-done:
			t.Fatal("the batch applied on a full disk: fill more")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stall reported (failed commits %d, want %d)", h.f.FailedCommits(), attempts)
		}
	}
	return h.f.Stalled()
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

	s := stalled(t, h, 1, done)
	if !s.DiskFull || s.Index != logs[0].Index || !fsm.IsDiskFull(s.Err) {
		t.Fatalf("stall %+v", s)
	}
	if n, err := h.f.Count(); err != nil || n != 1 || h.f.AppliedIndex() != before {
		t.Fatalf("while stalled: count %d (%v), applied %d (want %d)", n, err, h.f.AppliedIndex(), before)
	}
	stalled(t, h, 2, done) // it retries: wait for a second attempt, however long the first took
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
	stalled(t, h, 1, done)
	close(stop)
	for _, o := range await(t, "ApplyBatch kept retrying after Stop", done) {
		if o != nil {
			t.Fatalf("a result from an unapplied batch: %v", o)
		}
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
	failed := h.f.FailedCommits()
	go func() { done <- h.f.ApplyBatch(next) }()
	// The batch is applied onto the group again and their commit fails:
	// wait for that attempt rather than for a while.
	stalled(t, h, failed+1, done)
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

// Closing the FSM ends a batch's retrying, as Options.Stop does: the batch
// is left unapplied and the retry does not find the closed file and stop
// the process (a test that failed while a batch was retrying took its
// whole package down that way).
func TestCloseEndsApplyRetrying(t *testing.T) {
	h, dir := tmpfsHarness(t, fsm.Options{})
	h.create(question(t, "before"))
	before := h.f.AppliedIndex()
	fillDisk(t, dir)
	done := make(chan []interface{}, 1)
	go func() { done <- h.f.ApplyBatch(bigBatch(t, h, 40)) }()
	stalled(t, h, 1, done)
	if err := h.f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, o := range await(t, "ApplyBatch kept retrying after Close", done) {
		if o != nil {
			t.Fatalf("a result from an unapplied batch: %v", o)
		}
	}
	if idx, err := fsm.CheckStateFile(h.path); err != nil || idx != before {
		t.Fatalf("check: %d %v, want %d", idx, err, before)
	}
}
