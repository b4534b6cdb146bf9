package fsm

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/restarea/restarea"
	bolt "go.etcd.io/bbolt"
)

// The bbolt buckets. Keys built from numbers are big-endian so byte order
// is numeric order.
var (
	bMeta       = []byte("meta")        // applied index, settings, clock, counters
	bEntries    = []byte("entries")     // seq → record JSON: every stored entry, log order
	bIDs        = []byte("ids")         // entry id → seq
	bByRequest  = []byte("by_request")  // request_id → seq
	bThreads    = []byte("threads")     // seq → nil: visible questions
	bReplies    = []byte("replies")     // thread id + seq → nil: visible replies
	bExpiry     = []byte("expiry")      // created_at nanos + seq → nil
	bTombs      = []byte("tombstones")  // request_id → tombstone JSON
	bTombIDs    = []byte("tomb_ids")    // deleted entry id → request_id
	bTombExpiry = []byte("tomb_expiry") // deleted_at nanos + request_id → nil
	bSources    = []byte("sources")     // source address → packed attempt times
	bGlobal     = []byte("global")      // created_at nanos + seq → nil: new entries in the site-wide window
	bMembers    = []byte("members")     // node id → MemberInfo JSON

	allBuckets = [][]byte{bMeta, bEntries, bIDs, bByRequest, bThreads, bReplies, bExpiry, bTombs, bTombIDs, bTombExpiry, bSources, bGlobal, bMembers}
)

// Keys in bMeta.
var (
	kApplied     = []byte("applied_index")
	kSettings    = []byte("settings")
	kClock       = []byte("clock")
	kEntries     = []byte("entry_count")
	kGlobalCount = []byte("global_count")
	kPruneFrom   = []byte("prune_sources_from")
)

// record is an entry as stored.
type record struct {
	restarea.Entry
	AttemptID string `json:"attempt_id"`
	// Seq is the log index of the command that created the entry; it
	// orders threads and replies and makes cursors stable.
	Seq uint64 `json:"seq"`
}

// tombstone remembers a deleted entry's request without its text: a hash
// of its content is enough to tell a replay (410) from a conflict (409).
type tombstone struct {
	ID          string `json:"id"`
	ContentHash []byte `json:"content_hash"`
	DeletedAt   int64  `json:"deleted_at"`
}

// storedSettings are the settings plus which limits an operator has set.
type storedSettings struct {
	restarea.Settings
	OperatorSetPerSource bool `json:"operator_set_per_source,omitempty"`
	OperatorSetGlobal    bool `json:"operator_set_global,omitempty"`
}

func contentHash(c restarea.Content) []byte {
	b, _ := json.Marshal(c)
	h := sha256.Sum256(b)
	return h[:]
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func readU64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func timeSeqKey(nanos int64, seq uint64) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, uint64(nanos))
	binary.BigEndian.PutUint64(b[8:], seq)
	return b
}

func replyKey(threadID string, seq uint64) []byte {
	return append([]byte(threadID), u64(seq)...)
}

// Records are keyed by their sequence number, so new entries append at
// the end of the bucket (dense pages, few pages written per batch, flat
// cost as the store grows); ids and request_ids are small indexes that
// point at sequence numbers.

func getRecord(tx *bolt.Tx, id string) (*record, error) {
	seq := tx.Bucket(bIDs).Get([]byte(id))
	if seq == nil {
		return nil, nil
	}
	r, err := recordAt(tx, seq)
	if err == nil && r == nil {
		err = errMissing(id)
	}
	return r, err
}

// recordAt returns the record stored under an 8-byte sequence key.
func recordAt(tx *bolt.Tx, seq []byte) (*record, error) {
	v := tx.Bucket(bEntries).Get(seq)
	if v == nil {
		return nil, nil
	}
	return decodeRecord(v)
}

func decodeRecord(v []byte) (*record, error) {
	var r record
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("fsm: stored entry: %w", err)
	}
	return &r, nil
}

func putRecord(tx *bolt.Tx, r *record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	entries := tx.Bucket(bEntries)
	// Keys only ever grow, so pages can be filled instead of split in half.
	entries.FillPercent = 0.95
	return entries.Put(u64(r.Seq), b)
}

func getSettings(tx *bolt.Tx) storedSettings {
	s := storedSettings{Settings: restarea.DefaultSettings()}
	if v := tx.Bucket(bMeta).Get(kSettings); v != nil {
		_ = json.Unmarshal(v, &s)
	}
	return s
}

func putSettings(tx *bolt.Tx, s storedSettings) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return tx.Bucket(bMeta).Put(kSettings, b)
}

func addCounter(tx *bolt.Tx, key []byte, delta int64) error {
	m := tx.Bucket(bMeta)
	v := int64(readU64(m.Get(key))) + delta
	if v < 0 {
		v = 0
	}
	return m.Put(key, u64(uint64(v)))
}
