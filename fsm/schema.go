package fsm

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

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
	bAudit      = []byte("audit")       // log index → restarea.AuditRecord JSON (log format 3)
	bByBody     = []byte("by_body")     // body fingerprint (16 bytes) + seq → nil: from cluster version 4 (fingerprint.go)

	allBuckets = [][]byte{bMeta, bEntries, bIDs, bByRequest, bThreads, bReplies, bExpiry, bTombs, bTombIDs, bTombExpiry, bSources, bGlobal, bMembers, bAudit, bByBody}
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
	b := make([]byte, len(threadID)+8)
	binary.BigEndian.PutUint64(b[copy(b, threadID):], seq)
	return b
}

// Records are keyed by their sequence number, so new entries append at
// the end of the bucket (dense pages, few pages written per batch, flat
// cost as the store grows); ids and request_ids are small indexes that
// point at sequence numbers.

func getRecord(tx *bolt.Tx, id string) (*record, error) {
	seq, err := get(tx, bIDs, []byte(id))
	if seq == nil || err != nil {
		return nil, err
	}
	r, err := recordAt(tx, seq)
	if err == nil && r == nil {
		err = errMissing(id)
	}
	return r, err
}

// recordAt returns the record stored under an 8-byte sequence key.
func recordAt(tx *bolt.Tx, seq []byte) (*record, error) {
	v, err := get(tx, bEntries, seq)
	if v == nil || err != nil {
		return nil, err
	}
	return decodeRecord(v)
}

// decodeRecord decodes a stored record: by parseRecordJSON when it has
// the shape appendRecordJSON writes (every record this version stored),
// else by encoding/json, with the same result either way.
func decodeRecord(v []byte) (*record, error) {
	if r, ok := parseRecordJSON(v); ok {
		return r, nil
	}
	var r record
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("fsm: stored entry: %w", err)
	}
	return &r, nil
}

// putRecord stores r, sealed when on (sumOn of tx).
func putRecord(tx *bolt.Tx, on bool, r *record) error {
	// The JSON is written after room for the checksum's header, so a
	// sealed record costs no copy.
	b, ok := appendRecordJSON(make([]byte, sumHeader, sumHeader+recordJSONSize(r)), r)
	if !ok {
		// A time RFC 3339 cannot express: let encoding/json report it.
		j, err := json.Marshal(r)
		if err != nil {
			return err
		}
		b = append(b[:sumHeader], j...)
	}
	key := u64(r.Seq)
	if on {
		b = sealInto(bEntries, key, b)
	} else {
		b = b[sumHeader:]
	}
	entries := tx.Bucket(bEntries)
	// Keys only ever grow, so pages can be filled instead of split in half.
	entries.FillPercent = 0.95
	return entries.Put(key, b)
}

// getSettings returns the settings in force. Every post reads them, and
// they rarely change, so the last decoded value is kept with the exact
// bytes it was decoded from: the result is the same as decoding every
// time, because it is a function of those bytes alone.
func getSettings(tx *bolt.Tx) (storedSettings, error) {
	raw := tx.Bucket(bMeta).Get(kSettings)
	if raw == nil {
		return storedSettings{Settings: restarea.DefaultSettings()}, nil
	}
	// The memo holds the stored bytes, checksum included, that were
	// checked when it was made: the same bytes need no second check.
	if m := settingsMemo.Load(); m != nil && bytes.Equal(m.raw, raw) {
		return m.s, nil
	}
	v, err := unseal(bMeta, kSettings, raw)
	if err != nil {
		return storedSettings{}, err
	}
	s := decodeSettings(v)
	// raw points into the database's memory map, valid only during tx:
	// keep a copy. Reads call this concurrently with applies; each memo is
	// immutable once stored, so a reader sees an old or a new one, whole.
	settingsMemo.Store(&memoSettings{raw: bytes.Clone(raw), s: s})
	return s, nil
}

// decodeSettings decodes stored settings over the defaults. A value that
// does not decode keeps the defaults for what it could not fill, as it
// always has (the error is deliberately ignored).
func decodeSettings(v []byte) storedSettings {
	s := storedSettings{Settings: restarea.DefaultSettings()}
	_ = json.Unmarshal(v, &s)
	return s
}

// memoSettings is a decoded settings value and the bytes it came from.
// storedSettings holds no pointers, so handing out copies of s is safe.
type memoSettings struct {
	raw []byte
	s   storedSettings
}

// settingsMemo is process-wide rather than per FSM: keyed by the exact
// bytes it is correct for any state file, and several FSMs in one process
// (tests) only cost a decode when they alternate.
var settingsMemo atomic.Pointer[memoSettings]

func putSettings(tx *bolt.Tx, s storedSettings) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return put(tx, bMeta, kSettings, b)
}

// addCounter adds delta to a counter of meta, stored sealed when on
// (sumOn of tx); it never goes below 0.
func addCounter(tx *bolt.Tx, on bool, key []byte, delta int64) error {
	n, err := getU64(tx, bMeta, key)
	if err != nil {
		return err
	}
	v := int64(n) + delta
	if v < 0 {
		v = 0
	}
	return storeU64(tx.Bucket(bMeta), on, bMeta, key, uint64(v))
}

// recordJSONSize is the length of r's JSON when no character needs an
// escape, so putRecord usually allocates once.
func recordJSONSize(r *record) int {
	const fixed = 240 // keys, quotes, punctuation, the time and the numbers
	return fixed + len(r.ID) + len(r.RequestID) + len(r.Type) + len(r.ParentID) + len(r.Title) +
		len(r.Body) + len(r.Actor.Name) + len(r.Actor.Model) + len(r.Actor.Trigger) +
		len(r.SubmissionMode) + len(r.Channel) + len(r.URL) + len(r.BookmarkURL) + len(r.AttemptID)
}

// appendRecordJSON appends exactly the bytes json.Marshal(r) returns, without
// reflection: records are the stored format (snapshots and backups carry
// it), so it must not change by a byte; TestRecordJSONMatchesMarshal
// compares the two on random records. It reports false, having appended
// garbage, for a CreatedAt that RFC 3339 cannot express (json.Marshal
// fails on it).
func appendRecordJSON(b []byte, r *record) ([]byte, bool) {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, r.ID)
	if r.RequestID != "" {
		b = append(b, `,"request_id":`...)
		b = appendJSONString(b, r.RequestID)
	}
	b = append(b, `,"type":`...)
	b = appendJSONString(b, r.Type)
	if r.ParentID != "" {
		b = append(b, `,"parent_id":`...)
		b = appendJSONString(b, r.ParentID)
	}
	if r.Title != "" {
		b = append(b, `,"title":`...)
		b = appendJSONString(b, r.Title)
	}
	b = append(b, `,"body":`...)
	b = appendJSONString(b, r.Body)
	b = append(b, `,"actor":{"name":`...)
	b = appendJSONString(b, r.Actor.Name)
	if r.Actor.Model != "" {
		b = append(b, `,"model":`...)
		b = appendJSONString(b, r.Actor.Model)
	}
	if r.Actor.Trigger != "" {
		b = append(b, `,"trigger":`...)
		b = appendJSONString(b, r.Actor.Trigger)
	}
	b = append(b, `},"submission_mode":`...)
	b = appendJSONString(b, r.SubmissionMode)
	b = append(b, `,"channel":`...)
	b = appendJSONString(b, string(r.Channel))
	b = append(b, `,"created_at":"`...)
	var ok bool
	if b, ok = appendJSONTime(b, r.CreatedAt); !ok {
		return b, false
	}
	b = append(b, `","visible":`...)
	b = strconv.AppendBool(b, r.Visible)
	b = append(b, `,"by_operator":`...)
	b = strconv.AppendBool(b, r.ByOperator)
	if r.URL != "" {
		b = append(b, `,"url":`...)
		b = appendJSONString(b, r.URL)
	}
	if r.BookmarkURL != "" {
		b = append(b, `,"bookmark_url":`...)
		b = appendJSONString(b, r.BookmarkURL)
	}
	b = append(b, `,"attempt_id":`...)
	b = appendJSONString(b, r.AttemptID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	return append(b, '}'), true
}

// appendJSONTime appends t as time.Time.MarshalJSON does (without the
// quotes), and reports false where MarshalJSON fails: a year outside
// [0,9999] or a zone offset of 24 hours or more.
func appendJSONTime(b []byte, t time.Time) ([]byte, bool) {
	n0 := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	switch {
	case b[n0+len("9999")] != '-':
		return b, false
	case b[len(b)-1] != 'Z':
		c := b[len(b)-len("Z07:00")]
		h := b[len(b)-len("07:00"):]
		if '0' <= c && c <= '9' || 10*(h[0]-'0')+(h[1]-'0') >= 24 {
			return b, false
		}
	}
	return b, true
}

// appendJSONString appends s quoted exactly as encoding/json does with
// its default HTML escaping: quote, backslash and control characters
// escaped (\n, \r, \t, \b, \f by name, the others as \u00XX), <, > and &
// as \u00XX, U+2028 and U+2029 escaped, and each byte of invalid UTF-8
// replaced by \ufffd.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
