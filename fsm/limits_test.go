package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
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

// refAdmitSource is admitSource as it was before it worked on the stored
// bytes directly: TestAdmitSourceMatchesReference holds the rewrite to
// the same decisions and the same stored bytes, which every node of a
// cluster running mixed versions must agree on.
func refAdmitSource(b *bolt.Bucket, key []byte, now int64, limit restarea.Limit) (time.Duration, bool, error) {
	if limit.Count > exactSourceLimit {
		window := int64(limit.Window())
		width := window / sourceSlots
		cut := now - window
		var live []slot
		sum := int64(0)
		for _, s := range attemptSlots(b.Get(key), width) {
			if s.start > cut {
				live = append(live, s)
				sum += s.count
			}
		}
		if sum >= int64(limit.Count) {
			wait := live[0].start + window - now
			return time.Duration(max(wait, int64(time.Millisecond))), false, nil
		}
		cur := now - now%width
		if n := len(live); n > 0 && live[n-1].start == cur {
			live[n-1].count++
		} else {
			live = append(live, slot{cur, 1})
		}
		buf := make([]byte, 8, 8+16*len(live))
		copy(buf, slotMagic)
		for _, s := range live {
			buf = binary.BigEndian.AppendUint64(buf, uint64(s.start))
			buf = binary.BigEndian.AppendUint64(buf, uint64(s.count))
		}
		return 0, true, b.Put(key, buf)
	}
	times := attemptTimes(b.Get(key))
	cut := now - int64(limit.Window())
	i := 0
	for i < len(times) && times[i] <= cut {
		i++
	}
	times = times[i:]
	if len(times) >= limit.Count {
		oldest := times[len(times)-limit.Count]
		return time.Duration(oldest + int64(limit.Window()) - now), false, nil
	}
	times = append(times, now)
	return 0, true, b.Put(key, packTimes(times))
}

func TestAdmitSourceMatchesReference(t *testing.T) {
	// One state file for admitSource, one for the reference.
	var dbs [2]*bolt.DB
	for i := range dbs {
		db, err := bolt.Open(filepath.Join(t.TempDir(), fmt.Sprint(i)), 0o600, &bolt.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(func(tx *bolt.Tx) error {
			if _, err := tx.CreateBucket(bMeta); err != nil { // the cluster version: stored values are bare
				return err
			}
			_, err := tx.CreateBucket(bSources)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		dbs[i] = db
	}
	type answer struct {
		wait   time.Duration
		ok     bool
		err    error
		stored []byte
	}
	run := func(db *bolt.DB, admit func(tx *bolt.Tx) (time.Duration, bool, error), src string) answer {
		var a answer
		if err := db.Update(func(tx *bolt.Tx) error {
			a.wait, a.ok, a.err = admit(tx)
			a.stored = bytes.Clone(tx.Bucket(bSources).Get([]byte(src)))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return a
	}
	rng := rand.New(rand.NewSource(1))
	counts := []int{1, 2, 3, 5, 30, 255, 256, 257, 300, 1_000_000}
	windows := []int{1, 2, 7, 60, 61, 3600}
	sources := []string{"a", "b", "c"}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	limit := restarea.Limit{Count: 3, WindowSeconds: 60}
	outcomes := map[[2]bool]int{} // {slotted, admitted}
	for step := range 10000 {
		if rng.Intn(200) == 0 {
			limit = restarea.Limit{Count: counts[rng.Intn(len(counts))], WindowSeconds: windows[rng.Intn(len(windows))]}
		}
		switch rng.Intn(10) {
		case 0:
			now += int64(rng.Intn(120)) * int64(time.Second)
		case 1, 2, 3:
		default:
			now += rng.Int63n(int64(200 * time.Millisecond))
		}
		src := sources[rng.Intn(len(sources))]
		burst := 1
		if rng.Intn(100) == 0 {
			burst = 150 + rng.Intn(200) // enough to fill a slotted window
		}
		for range burst {
			now += rng.Int63n(int64(time.Millisecond))
			got := run(dbs[0], func(tx *bolt.Tx) (time.Duration, bool, error) {
				return admitSource(tx, src, now, limit)
			}, src)
			want := run(dbs[1], func(tx *bolt.Tx) (time.Duration, bool, error) {
				return refAdmitSource(tx.Bucket(bSources), []byte(src), now, limit)
			}, src)
			if got.wait != want.wait || got.ok != want.ok || (got.err == nil) != (want.err == nil) || !bytes.Equal(got.stored, want.stored) {
				t.Fatalf("step %d, limit %v: admitSource = %+v, reference %+v", step, limit, got, want)
			}
			outcomes[[2]bool{limit.Count > exactSourceLimit, got.ok}]++
		}
	}
	t.Logf("outcomes %v", outcomes)
	if len(outcomes) != 4 {
		t.Fatalf("outcomes %v: both kinds of record must both admit and refuse", outcomes)
	}
}
