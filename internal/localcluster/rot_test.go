package localcluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// rotValue changes one digit after the marker in the live copy of the
// chosen value — the newest or the oldest whose key passes keep — and
// nothing else: every other value reads as before.
func TestRotValueChangesOneDigitOfTheLiveValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64][]byte{}
	// Rewriting every value twice leaves stale copies on freed pages: the
	// change must land on the live one.
	for round := range 2 {
		if err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("logs"))
			if err != nil {
				return err
			}
			for k := uint64(1); k <= 50; k++ {
				v := []byte(fmt.Sprintf(`{"body":"chaos body %d%d from worker 3"}`, k, round))
				want[k] = v
				if err := b.Put(binary.BigEndian.AppendUint64(nil, k), v); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	rot, err := rotValue(path, "raft.db", []byte("logs"), []byte("chaos body "), func(k uint64) bool { return k < 40 }, true)
	if err != nil {
		t.Fatal(err)
	}
	if rot.Key != 39 || rot.Was == rot.Now || rot.Now < '0' || rot.Now > '9' {
		t.Fatalf("rot %+v: want key 39, one digit changed to another", rot)
	}
	db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("logs"))
		for k, w := range want {
			got := b.Get(binary.BigEndian.AppendUint64(nil, k))
			if k != rot.Key {
				if !bytes.Equal(got, w) {
					t.Errorf("key %d changed: %q", k, got)
				}
				continue
			}
			diff := 0
			for i := range got {
				if got[i] != w[i] {
					diff++
				}
			}
			if diff != 1 || !bytes.Contains(got, []byte{rot.Now}) {
				t.Errorf("key %d: %q, want %q with one byte changed", k, got, w)
			}
		}
		return nil
	})

	if _, err := rotValue(path, "raft.db", []byte("logs"), []byte("no such marker "), func(uint64) bool { return true }, false); !errors.Is(err, ErrNothingToRot) {
		t.Fatalf("no value with the marker: %v, want ErrNothingToRot", err)
	}
}
