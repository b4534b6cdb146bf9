package fsm

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Pruning idle sources walks a bounded number of them per call and goes on
// where it stopped, so every idle source goes eventually and active ones
// stay.
func TestPruneSourcesIsBoundedAndResumes(t *testing.T) {
	f, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	window := time.Minute
	err = f.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bSources)
		for i := range 25 {
			at := now - int64(2*window) // idle
			if i%5 == 0 {
				at = now // active
			}
			b.Put([]byte(fmt.Sprintf("10.0.0.%d", i)), packTimes([]int64{at}))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for call := 0; call < 20; call++ {
		f.db.Update(func(tx *bolt.Tx) error {
			n, err := pruneSources(tx, now, window, 4)
			if err != nil {
				t.Fatal(err)
			}
			if n > 4 {
				t.Fatalf("call %d pruned %d sources, more than it may examine", call, n)
			}
			total += n
			return nil
		})
	}
	var left int
	f.db.View(func(tx *bolt.Tx) error {
		left = tx.Bucket(bSources).Stats().KeyN
		return nil
	})
	if total != 20 || left != 5 {
		t.Fatalf("pruned %d, left %d; want 20 pruned and the 5 active sources left", total, left)
	}
}
