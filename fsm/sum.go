package fsm

import (
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"

	bolt "go.etcd.io/bbolt"
)

// Every value of the state file written from cluster version 3 on carries
// a checksum: [sumMarker][CRC-32C, big-endian, of bucket name, key and
// payload][payload]. The key and the bucket are covered too, so an index
// entry whose payload is empty, or a page of one bucket read as another's,
// is checked as well as a record. Values written before stay as they were
// and read as before: a value is sealed exactly when it starts with
// sumMarker, which no value an earlier release wrote starts with —
//
//   - JSON (records, tombstones, members, audit, settings) starts with '{';
//   - big-endian sequence numbers, counters, clocks, versions and attempt
//     times are non-negative int64s: their first byte is at most 0x7f;
//   - a slotted source record starts with 0xff (slotMagic), hence 0xfe;
//   - tomb_ids values are request ids (UUIDs: ASCII);
//   - index buckets hold empty values.
//
// Two meta values may hold random bytes and are read by their own rule:
// the lineage (32 bytes legacy, 37 sealed; readLineage) and the sources
// pruning position, which may be a SHA-256 (dropped when the cluster
// version reaches 3, sealed after; readPruneFrom).
//
// Whether a value is sealed depends only on the cluster version as
// applied in the same transaction, so every node writes the same bytes.
const (
	sumMarker = 0xfe
	sumHeader = 5
)

// sumFromVersion is the cluster version from which values are sealed.
const sumFromVersion = 3

// stateFile names the state file in a CorruptError.
const stateFile = "state.db"

// sumOn reports whether a value written now in tx is sealed.
func sumOn(tx *bolt.Tx) (bool, error) {
	v, err := readClusterVersion(tx)
	return v >= sumFromVersion, err
}

// recordSum is the checksum of a value's payload under key k of bucket.
func recordSum(bucket, k, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, bucket)
	c = crc32.Update(c, castagnoli, k)
	return crc32.Update(c, castagnoli, payload)
}

// sealInto fills the sumHeader bytes at the start of b with the header of
// the payload b[sumHeader:] under key k of bucket, and returns b.
func sealInto(bucket, k, b []byte) []byte {
	b[0] = sumMarker
	binary.BigEndian.PutUint32(b[1:sumHeader], recordSum(bucket, k, b[sumHeader:]))
	return b
}

// sealed returns payload as stored under k of bucket: sealed when on.
func sealed(on bool, bucket, k, payload []byte) []byte {
	if !on {
		return payload
	}
	b := make([]byte, sumHeader+len(payload))
	copy(b[sumHeader:], payload)
	return sealInto(bucket, k, b)
}

// unseal returns the payload of a stored value v read under key k of
// bucket (by Get or by a cursor): v itself when it carries no checksum,
// else the bytes after the header once the checksum matches. A mismatch
// returns a *CorruptError and never the bytes; so does a value whose
// first byte is one bit from the marker (markerFlipped). A nil v stays nil.
func unseal(bucket, k, v []byte) ([]byte, error) {
	if len(v) == 0 {
		return v, nil
	}
	if v[0] != sumMarker {
		if markerFlipped(bucket, v) {
			return nil, &CorruptError{File: stateFile, Where: where(bucket, k) + ": checksum marker"}
		}
		return v, nil
	}
	if len(v) < sumHeader {
		return nil, &CorruptError{File: stateFile, Where: where(bucket, k)}
	}
	want := binary.BigEndian.Uint32(v[1:sumHeader])
	if got := recordSum(bucket, k, v[sumHeader:]); got != want {
		return nil, &CorruptError{File: stateFile, Where: where(bucket, k), Want: want, Got: got}
	}
	return v[sumHeader:], nil
}

// markerFlipped reports whether v, which does not start with sumMarker,
// starts with a byte one bit away from it (0xff, 0xfc, 0xfa, 0xf6, 0xee,
// 0xde, 0xbe, 0x7e): no bare value does but a slotted source record
// (0xff), so it is a sealed value whose marker was damaged. JSON starts
// with '{' and request ids with a hex digit; a number's first byte is
// below 0x7e (a time reaches it in the year 2257, a sequence number never). The rule looks at the
// first byte only, which no client chooses: a test of the header against
// the rest would let a crafted request id pass for a damaged value, and
// stop every node at once.
func markerFlipped(bucket, v []byte) bool {
	d := v[0] ^ sumMarker
	if d&(d-1) != 0 {
		return false // more than one bit away
	}
	return string(bucket) != string(bSources) || !isSlotted(v)
}

// isSealed reports whether a stored value carries a checksum.
func isSealed(v []byte) bool { return len(v) > 0 && v[0] == sumMarker }

// where names a key of a bucket in a CorruptError: as text when it is
// printable ASCII, else in hex.
func where(bucket, k []byte) string {
	for _, c := range k {
		if c < 0x20 || c > 0x7e {
			return string(bucket) + "/" + hex.EncodeToString(k)
		}
	}
	return string(bucket) + "/" + string(k)
}

// get returns the payload stored under k in bucket (nil when absent),
// checked.
func get(tx *bolt.Tx, bucket, k []byte) ([]byte, error) {
	return unseal(bucket, k, tx.Bucket(bucket).Get(k))
}

// put stores payload under k in bucket, sealed from cluster version 3.
func put(tx *bolt.Tx, bucket, k, payload []byte) error {
	on, err := sumOn(tx)
	if err != nil {
		return err
	}
	return tx.Bucket(bucket).Put(k, sealed(on, bucket, k, payload))
}

// putBuilt stores under k of bucket a payload built after sumHeader
// bytes left free at the start of b: sealed in place when on (no copy),
// else without those bytes.
func putBuilt(b *bolt.Bucket, on bool, bucket, k, buf []byte) error {
	if on {
		return b.Put(k, sealInto(bucket, k, buf))
	}
	return b.Put(k, buf[sumHeader:])
}

// getU64 reads a big-endian number (0 when absent or not 8 bytes long).
func getU64(tx *bolt.Tx, bucket, k []byte) (uint64, error) {
	v, err := get(tx, bucket, k)
	return readU64(v), err
}

// putU64 stores a big-endian number, in one allocation.
func putU64(tx *bolt.Tx, bucket, k []byte, n uint64) error {
	on, err := sumOn(tx)
	if err != nil {
		return err
	}
	return storeU64(tx.Bucket(bucket), on, bucket, k, n)
}

// storeU64 is putU64 when the caller knows whether values are sealed (on,
// from sumOn in the same transaction): a post stores several values and
// reads the cluster version once.
func storeU64(b *bolt.Bucket, on bool, bucket, k []byte, n uint64) error {
	if !on {
		return b.Put(k, u64(n))
	}
	v := make([]byte, sumHeader+8)
	binary.BigEndian.PutUint64(v[sumHeader:], n)
	return b.Put(k, sealInto(bucket, k, v))
}

// putMark stores a key whose value says nothing (an index entry): empty
// before cluster version 3, the header alone after (on, from sumOn).
func putMark(b *bolt.Bucket, on bool, bucket, k []byte) error {
	if !on {
		return b.Put(k, nil)
	}
	return b.Put(k, sealInto(bucket, k, make([]byte, sumHeader)))
}

// hasKey reports whether bucket holds k, checking its value. It seeks
// instead of Get because Get returns nil for an empty value put in the
// same transaction.
func hasKey(tx *bolt.Tx, bucket, k []byte) (bool, error) {
	got, v := tx.Bucket(bucket).Cursor().Seek(k)
	if got == nil || string(got) != string(k) {
		return false, nil
	}
	_, err := unseal(bucket, k, v)
	return err == nil, err
}
