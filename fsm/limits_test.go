package fsm

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/restarea/restarea"
)

// Above exactSourceLimit the per-source window is kept as bounded slot
// counters: the limit still holds, the record stays small, the window
// still frees up, and switching the limit across the threshold keeps the
// attempts already counted.
func TestSlottedSourceLimit(t *testing.T) {
	f, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	big := restarea.Limit{Count: 1000, WindowSeconds: 60}
	admit := func(now int64, l restarea.Limit) (time.Duration, bool) {
		var wait time.Duration
		var ok bool
		f.db.Update(func(tx *bolt.Tx) error {
			var err error
			wait, ok, err = admitSource(tx, "198.51.100.7", now, l)
			return err
		})
		return wait, ok
	}
	size := func() int {
		var n int
		f.db.View(func(tx *bolt.Tx) error { n = len(tx.Bucket(bSources).Get([]byte("198.51.100.7"))); return nil })
		return n
	}
	// 1,000 attempts spread over 30 s are admitted; the next is refused.
	for i := range 1000 {
		if _, ok := admit(t0+int64(i)*int64(30*time.Millisecond), big); !ok {
			t.Fatalf("attempt %d refused under the limit", i)
		}
	}
	if n := size(); n > 8+16*(sourceSlots+1) {
		t.Fatalf("record is %d bytes; slots should bound it", n)
	}
	now := t0 + int64(30*time.Second)
	wait, ok := admit(now, big)
	if ok || wait <= 0 || wait > 61*time.Second {
		t.Fatalf("over the limit: ok=%v wait=%v", ok, wait)
	}
	// Once the window has passed, attempts are admitted again.
	if _, ok := admit(now+int64(wait)+int64(time.Second), big); !ok {
		t.Fatal("not admitted after the suggested wait")
	}
	// Lowering the limit below the threshold keeps counting what is there.
	if _, ok := admit(now+int64(wait)+int64(2*time.Second), restarea.Limit{Count: 5, WindowSeconds: 60}); ok {
		t.Fatal("a lowered limit forgot the attempts already in the window")
	}
}
