package fsm

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"time"

	"github.com/restarea/restarea"
	bolt "go.etcd.io/bbolt"
)

// admitSource applies the per-source sliding window: the source may make
// limit.Count attempts in any window of limit.Window(). A refused attempt
// is not recorded, so a client that waits the given delay gets through.
// The times are kept in the replicated state, so the limit is the same on
// every node and survives leader changes.
func admitSource(tx *bolt.Tx, source string, now int64, limit restarea.Limit) (time.Duration, bool, error) {
	b := tx.Bucket(bSources)
	key := sourceKey(source)
	v, err := unseal(bSources, key, b.Get(key))
	if err != nil {
		return 0, false, err
	}
	if wait, ok := sourceVerdict(v, now, limit); !ok {
		return wait, false, nil
	}
	on, err := sumOn(tx)
	if err != nil {
		return 0, false, err
	}
	if limit.Count > exactSourceLimit {
		return 0, true, recordSlotted(b, on, key, v, now, limit)
	}
	cut := now - int64(limit.Window())
	if isSlotted(v) {
		// The limit was lowered past exactSourceLimit: convert (rare).
		times := attemptTimes(v)
		i := 0
		for i < len(times) && times[i] <= cut {
			i++
		}
		return 0, true, b.Put(key, sealed(on, bSources, key, packTimes(append(times[i:], now))))
	}
	// The common case works on the stored bytes directly, so an attempt
	// costs one allocation (the new value) instead of three.
	n := len(v) / 8
	i := 0
	for i < n && int64(binary.BigEndian.Uint64(v[8*i:])) <= cut {
		i++
	}
	buf := make([]byte, sumHeader+8*(n-i+1))
	copy(buf[sumHeader:], v[8*i:8*n])
	binary.BigEndian.PutUint64(buf[sumHeader+8*(n-i):], uint64(now))
	return 0, true, putBuilt(b, on, bSources, key, buf)
}

// sourceKey is the key of a source's attempts in bSources.
func sourceKey(source string) []byte {
	key := []byte(source)
	switch {
	case len(key) == 0:
		key = []byte("-")
	case len(key) > 256:
		// Sources are addresses; anything longer is hashed so it can never
		// exceed bbolt's key limit and stop the state machine.
		h := sha256.Sum256(key)
		key = h[:]
	}
	return key
}

// sourceVerdict is the per-source limit's decision for an attempt at now,
// given the source's stored record v: admitted, or refused with the delay
// until the window frees a slot. It only reads v: admitSource records an
// admitted attempt after it, and SourceRefusal asks it without applying
// anything, so the two cannot disagree.
func sourceVerdict(v []byte, now int64, limit restarea.Limit) (time.Duration, bool) {
	window := int64(limit.Window())
	cut := now - window
	if limit.Count > exactSourceLimit {
		// The live slots are those that start inside the window, in stored
		// order (not necessarily time order: the width changes with the
		// window); the first live one frees the window.
		sum, first, live := int64(0), int64(0), false
		count := func(s slot) {
			if s.start > cut {
				if !live {
					first, live = s.start, true
				}
				sum += s.count
			}
		}
		if isSlotted(v) {
			// Read from the stored bytes: no allocation per attempt.
			for o := 8; o+16 <= len(v); o += 16 {
				count(slot{int64(binary.BigEndian.Uint64(v[o:])), int64(binary.BigEndian.Uint64(v[o+8:]))})
			}
		} else {
			// An exact list: the limit was just raised past exactSourceLimit.
			for _, s := range attemptSlots(v, window/sourceSlots) {
				count(s)
			}
		}
		if sum >= int64(limit.Count) {
			return time.Duration(max(first+window-now, int64(time.Millisecond))), false
		}
		return 0, true
	}
	if isSlotted(v) {
		// The limit was lowered past exactSourceLimit (rare).
		times := attemptTimes(v)
		i := 0
		for i < len(times) && times[i] <= cut {
			i++
		}
		if live := len(times) - i; live >= limit.Count {
			return time.Duration(times[len(times)-limit.Count] + window - now), false
		}
		return 0, true
	}
	// The common case reads the stored bytes directly, without a copy.
	n := len(v) / 8
	i := 0
	for i < n && int64(binary.BigEndian.Uint64(v[8*i:])) <= cut {
		i++
	}
	if live := n - i; live >= limit.Count {
		oldest := int64(binary.BigEndian.Uint64(v[8*(n-limit.Count):]))
		return time.Duration(oldest + window - now), false
	}
	return 0, true
}

// Up to exactSourceLimit attempts per window the record is the exact list
// of attempt times. Above it, a list would be rewritten in full on every
// attempt, so the window is kept as sourceSlots counters instead: an
// attempt counts from the start of its slot, which makes the window at
// most one slot (1/60 of it) longer than configured.
const (
	exactSourceLimit = 256
	sourceSlots      = 60
)

// slotMagic starts a slotted record; no attempt time is negative, so an
// exact list never starts with it.
var slotMagic = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

type slot struct{ start, count int64 }

func isSlotted(v []byte) bool { return len(v) >= 8 && bytes.Equal(v[:8], slotMagic) }

// recordSlotted records an admitted attempt in a slotted record (v is the
// stored one, slotted or an exact list to convert).
func recordSlotted(b *bolt.Bucket, on bool, key, v []byte, now int64, limit restarea.Limit) error {
	window := int64(limit.Window())
	width := window / sourceSlots
	cut := now - window
	// Slots are read from the stored bytes where possible; only an exact
	// list (the limit was just raised past exactSourceLimit) is converted.
	var conv []slot
	n := 0
	if isSlotted(v) {
		n = (len(v) - 8) / 16
	} else {
		conv = attemptSlots(v, width)
		n = len(conv)
	}
	at := func(i int) slot {
		if conv != nil {
			return conv[i]
		}
		o := 8 + 16*i
		return slot{int64(binary.BigEndian.Uint64(v[o:])), int64(binary.BigEndian.Uint64(v[o+8:]))}
	}
	// The last live slot absorbs this attempt if it is the current slot.
	live, last := 0, -1
	for i := range n {
		if at(i).start > cut {
			live++
			last = i
		}
	}
	cur := now - now%width
	grow := last < 0 || at(last).start != cur
	size := 8 + 16*live
	if grow {
		size += 16
	}
	buf := make([]byte, sumHeader+8, sumHeader+size)
	copy(buf[sumHeader:], slotMagic)
	for i := range n {
		s := at(i)
		if s.start <= cut {
			continue
		}
		if i == last && !grow {
			s.count++
		}
		buf = binary.BigEndian.AppendUint64(buf, uint64(s.start))
		buf = binary.BigEndian.AppendUint64(buf, uint64(s.count))
	}
	if grow {
		buf = binary.BigEndian.AppendUint64(buf, uint64(cur))
		buf = binary.BigEndian.AppendUint64(buf, 1)
	}
	return putBuilt(b, on, bSources, key, buf)
}

// attemptSlots reads a record as slots of the given width, converting an
// exact list (the limit was raised past exactSourceLimit).
func attemptSlots(v []byte, width int64) []slot {
	var out []slot
	if isSlotted(v) {
		for i := 8; i+16 <= len(v); i += 16 {
			out = append(out, slot{int64(binary.BigEndian.Uint64(v[i:])), int64(binary.BigEndian.Uint64(v[i+8:]))})
		}
		return out
	}
	for _, t := range unpackTimes(v) {
		start := t - t%width
		if n := len(out); n > 0 && out[n-1].start == start {
			out[n-1].count++
		} else {
			out = append(out, slot{start, 1})
		}
	}
	return out
}

// attemptTimes reads a record as a list of attempt times, converting a
// slotted one (the limit was lowered to exactSourceLimit or below) by
// placing each attempt at its slot's start.
func attemptTimes(v []byte) []int64 {
	if !isSlotted(v) {
		return unpackTimes(v)
	}
	var out []int64
	for i := 8; i+16 <= len(v); i += 16 {
		start := int64(binary.BigEndian.Uint64(v[i:]))
		n := min(int64(binary.BigEndian.Uint64(v[i+8:])), exactSourceLimit)
		for range n {
			out = append(out, start)
		}
	}
	return out
}

// newestAttempt is the time of a record's latest attempt (slot start for
// a slotted one).
func newestAttempt(v []byte) int64 {
	switch {
	case isSlotted(v) && len(v) >= 24:
		return int64(binary.BigEndian.Uint64(v[len(v)-16:]))
	case !isSlotted(v) && len(v) >= 8:
		return int64(binary.BigEndian.Uint64(v[len(v)-8:]))
	}
	return 0
}

func packTimes(ts []int64) []byte {
	buf := make([]byte, 8*len(ts))
	for i, t := range ts {
		binary.BigEndian.PutUint64(buf[8*i:], uint64(t))
	}
	return buf
}

func unpackTimes(b []byte) []int64 {
	ts := make([]int64, 0, len(b)/8+1)
	for i := 0; i+8 <= len(b); i += 8 {
		ts = append(ts, int64(binary.BigEndian.Uint64(b[i:])))
	}
	return ts
}

// admitGlobal checks the site-wide cap on new entries in the window. The
// window's entries are keys in bGlobal, oldest first; expired ones are
// dropped here, so the work per post is constant on average.
func admitGlobal(tx *bolt.Tx, now int64, limit restarea.Limit) (time.Duration, bool, error) {
	b := tx.Bucket(bGlobal)
	cut := now - int64(limit.Window())
	c := b.Cursor()
	var dropped int64
	for k, v := c.First(); k != nil && int64(readU64(k[:8])) <= cut; k, v = c.First() {
		if _, err := unseal(bGlobal, k, v); err != nil {
			return 0, false, err
		}
		if err := c.Delete(); err != nil {
			break
		}
		dropped++
	}
	if dropped > 0 {
		on, err := sumOn(tx)
		if err == nil {
			err = addCounter(tx, on, kGlobalCount, -dropped)
		}
		if err != nil {
			return 0, false, err
		}
	}
	n, err := getU64(tx, bMeta, kGlobalCount)
	if err != nil {
		return 0, false, err
	}
	count := int(n)
	if count < limit.Count {
		return 0, true, nil
	}
	// The window frees a slot when its (count-limit+1)-th oldest entry
	// leaves it; walking is bounded by how far the limit was lowered.
	k, v := c.First()
	for i := 0; i < count-limit.Count && k != nil; i++ {
		if _, err := unseal(bGlobal, k, v); err != nil {
			return 0, false, err
		}
		k, v = c.Next()
	}
	if k == nil {
		return time.Second, false, nil
	}
	if _, err := unseal(bGlobal, k, v); err != nil {
		return 0, false, err
	}
	return time.Duration(int64(readU64(k[:8])) + int64(limit.Window()) - now), false, nil
}

func recordGlobal(tx *bolt.Tx, now int64, seq uint64) error {
	on, err := sumOn(tx)
	if err != nil {
		return err
	}
	if err := putMark(tx.Bucket(bGlobal), on, bGlobal, timeSeqKey(now, seq)); err != nil {
		return err
	}
	return addCounter(tx, on, kGlobalCount, 1)
}

// pruneSources drops sources with no attempt inside window, so idle
// clients do not stay in the state forever. Each call examines at most
// max sources, continuing where the previous call stopped (the position is
// part of the replicated state), so one expiry command stays small however
// many sources there are.
func pruneSources(tx *bolt.Tx, now int64, window time.Duration, max int) (int, error) {
	b := tx.Bucket(bSources)
	meta := tx.Bucket(bMeta)
	cut := now - int64(window)
	c := b.Cursor()
	var k, v []byte
	from, err := readPruneFrom(tx)
	if err != nil {
		return 0, err
	}
	if from != nil {
		k, v = c.Seek(from)
	} else {
		k, v = c.First()
	}
	var stale [][]byte
	for n := 0; k != nil && n < max; n++ {
		times, err := unseal(bSources, k, v)
		if err != nil {
			return 0, err
		}
		if newestAttempt(times) <= cut {
			stale = append(stale, bytes.Clone(k))
		}
		k, v = c.Next()
	}
	if k == nil {
		meta.Delete(kPruneFrom)
	} else if err := put(tx, bMeta, kPruneFrom, bytes.Clone(k)); err != nil {
		return 0, err
	}
	for _, s := range stale {
		b.Delete(s)
	}
	return len(stale), nil
}

// readPruneFrom returns where the next pruning pass starts (nil: at the
// first source). Before cluster version 3 the value is a bare sources
// key, which may be a SHA-256 and start with any byte, so it is taken as
// it is; the step to version 3 deletes it (applyClusterVersion), so from
// then on it is sealed like every other value.
func readPruneFrom(tx *bolt.Tx) ([]byte, error) {
	on, err := sumOn(tx)
	if err != nil || !on {
		return tx.Bucket(bMeta).Get(kPruneFrom), err
	}
	return get(tx, bMeta, kPruneFrom)
}
