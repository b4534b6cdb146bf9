package diskwatch

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"
)

// failingStore fails its writes while fail is set.
type failingStore struct {
	*raft.InmemStore
	fail atomic.Bool
	sets atomic.Int32
}

func (s *failingStore) err() error {
	if s.fail.Load() {
		return syscall.ENOSPC
	}
	return nil
}

func (s *failingStore) StoreLogs(logs []*raft.Log) error {
	if err := s.err(); err != nil {
		return err
	}
	return s.InmemStore.StoreLogs(logs)
}

func (s *failingStore) DeleteRange(min, max uint64) error { return s.InmemStore.DeleteRange(min, max) }

func (s *failingStore) SetUint64(k []byte, v uint64) error {
	s.sets.Add(1)
	if err := s.err(); err != nil {
		s.fail.Store(s.sets.Load() < 3) // fails three times, then succeeds
		return err
	}
	return s.InmemStore.SetUint64(k, v)
}

// A failed append is remembered until an append succeeds; a compaction
// that succeeds (it frees space) does not clear it.
func TestFailureLastsUntilAnAppendSucceeds(t *testing.T) {
	w := New(t.TempDir())
	st := &failingStore{InmemStore: raft.NewInmemStore()}
	logs := w.LogStore(st)
	st.fail.Store(true)
	if err := logs.StoreLogs([]*raft.Log{{Index: 1}}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append: %v", err)
	}
	f := w.Failed()
	if f == nil || f.Store != StoreLog || w.LogFailures() != 1 {
		t.Fatalf("failure not noted: %+v, %d", f, w.LogFailures())
	}
	select {
	case <-w.Wake():
	default:
		t.Fatal("a failed write did not wake the watcher")
	}
	st.fail.Store(false)
	if err := logs.DeleteRange(1, 1); err != nil || w.Failed() == nil {
		t.Fatalf("a compaction cleared the failure: %v, %+v", err, w.Failed())
	}
	if err := logs.StoreLogs([]*raft.Log{{Index: 1}}); err != nil || w.Failed() != nil {
		t.Fatalf("a successful append left the failure: %v, %+v", err, w.Failed())
	}
}

// A failed term or vote write is retried until it succeeds, and the
// attempts are counted.
func TestStableStoreRetries(t *testing.T) {
	w := New(t.TempDir())
	st := &failingStore{InmemStore: raft.NewInmemStore()}
	st.fail.Store(true)
	stable := w.StableStore(st, slog.New(slog.DiscardHandler), make(chan struct{}))
	if err := stable.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if v, _ := st.InmemStore.GetUint64([]byte("CurrentTerm")); v != 7 || w.StableFailures() != 3 || w.Failed() != nil {
		t.Fatalf("term %d, failures %d, failed %+v", v, w.StableFailures(), w.Failed())
	}
}

// A node that stops while its stable store fails gets an error, not a hang.
func TestStableStoreGivesUpOnStop(t *testing.T) {
	w := New(t.TempDir())
	st := &failingStore{InmemStore: raft.NewInmemStore()}
	st.fail.Store(true)
	st.sets.Store(-1 << 20) // never succeeds
	stop := make(chan struct{})
	close(stop)
	if err := w.StableStore(st, slog.New(slog.DiscardHandler), stop).SetUint64([]byte("k"), 1); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("err = %v, want the write's error", err)
	}
}
