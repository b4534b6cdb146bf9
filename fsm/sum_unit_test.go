package fsm

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// Every form of value an earlier release wrote reads back unchanged.
func TestBareValuesReadAsBefore(t *testing.T) {
	slotted := append(bytes.Clone(slotMagic), u64(uint64(time.Now().UnixNano()))...)
	for _, c := range []struct {
		bucket []byte
		v      []byte
	}{
		{bEntries, []byte(`{"id":"x"}`)},
		{bIDs, u64(42)},
		{bMeta, u64(uint64(time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()))},
		{bSources, packTimes([]int64{time.Now().UnixNano()})},
		{bSources, slotted},
		{bTombIDs, []byte("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")},
		{bThreads, []byte{}},
	} {
		got, err := unseal(c.bucket, []byte("k"), c.v)
		if err != nil || !bytes.Equal(got, c.v) {
			t.Errorf("%s: unseal(%x) = %x, %v; want it unchanged", c.bucket, c.v, got, err)
		}
	}
}

// CRC-32C catches every single-bit error, and a flip of the marker byte
// is caught by its shape: whichever bit of a sealed value flips, or of its
// key, reading it is a CorruptError.
func TestEveryBitFlipOfASealedValueIsCaught(t *testing.T) {
	for _, c := range []struct {
		bucket, payload []byte
	}{
		{bEntries, []byte(`{"id":"x","body":"text"}`)},
		{bByRequest, u64(7)},
		{bThreads, nil},
		{bSources, append(bytes.Clone(slotMagic), u64(1)...)},
	} {
		key := []byte("key")
		v := sealed(true, c.bucket, key, c.payload)
		if got, err := unseal(c.bucket, key, v); err != nil || !bytes.Equal(got, c.payload) {
			t.Fatalf("%s: the sealed value reads %x, %v", c.bucket, got, err)
		}
		for i := range 8 * len(v) {
			bad := bytes.Clone(v)
			bad[i/8] ^= 1 << (i % 8)
			if _, err := unseal(c.bucket, key, bad); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: bit %d flipped: %v, want a CorruptError", c.bucket, i, err)
			}
		}
		for i := range 8 * len(key) {
			bad := bytes.Clone(key)
			bad[i/8] ^= 1 << (i % 8)
			if _, err := unseal(c.bucket, bad, v); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: key bit %d flipped: %v, want a CorruptError", c.bucket, i, err)
			}
		}
	}
}
