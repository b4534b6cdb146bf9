package fsm

import (
	"bytes"
	"fmt"
	"time"

	"github.com/restarea/restarea"
	bolt "go.etcd.io/bbolt"
)

// From cluster version 4 every stored entry is also indexed by the
// fingerprint of its body (restarea.BodyFingerprint) in bByBody, so that
// a client that lost a request_id finds its post by the whole body, of
// any length (Find). Entries stored before the version was switched on
// are indexed by OpBackfill commands, which the leader proposes until
// none is left; until then Find refuses rather than answer "no match"
// for an entry it has not indexed yet, since a client told so would post
// again.
const fingerprintFromVersion = 4

// fingerprintLen is how much of the SHA-256 a key keeps: 128 bits make a
// collision between two different bodies practically impossible, and
// Find compares the bodies anyway.
const fingerprintLen = 16

// OpBackfill indexes up to Backfill.MaxItems entries stored before cluster
// version 4 by their body's fingerprint, oldest first, from where the last
// one stopped.
const OpBackfill Op = "backfill_fingerprints"

// BackfillCommand bounds one OpBackfill, so that indexing a large board
// never makes one huge transaction.
type BackfillCommand struct {
	MaxItems int `json:"max_items"`
}

// Keys in bMeta while the backfill runs: the next sequence number it
// examines, and the sequence number (the index of the command that
// switched version 4 on) from which entries were indexed when stored.
var (
	kBackfillNext = []byte("by_body_backfill_next")
	kBackfillEnd  = []byte("by_body_backfill_end")
)

// bodyKey is the key of an entry in bByBody: its body's fingerprint, then
// its sequence number, so that the entries with one body are adjacent and
// in log order.
func bodyKey(body string, seq uint64) []byte {
	fp := restarea.BodyFingerprint(body)
	return append(fp[:fingerprintLen:fingerprintLen], u64(seq)...)
}

// startBackfill is applied with the command that raises the cluster
// version to 4 (at log index index): it records which entries predate the
// fingerprints, if any does.
func startBackfill(tx *bolt.Tx, index uint64) error {
	k, _ := tx.Bucket(bEntries).Cursor().First()
	if k == nil || readU64(k) >= index {
		return nil
	}
	if err := putU64(tx, bMeta, kBackfillNext, readU64(k)); err != nil {
		return err
	}
	return putU64(tx, bMeta, kBackfillEnd, index)
}

// applyBackfill indexes the next c.MaxItems entries that predate the
// fingerprints; Result.Backfilled counts them and Result.BackfillLeft says
// whether any is left.
func applyBackfill(tx *bolt.Tx, c *BackfillCommand) (*Result, error) {
	version, err := readClusterVersion(tx)
	if err != nil {
		return nil, err
	}
	if version < fingerprintFromVersion {
		return refuse(restarea.CodeInvalidRequest, 0, "body fingerprints are switched on by cluster version %d; it is %d", fingerprintFromVersion, version), nil
	}
	if c.MaxItems <= 0 {
		return refuse(restarea.CodeInvalidRequest, 0, "backfill command without a positive max_items"), nil
	}
	next, end, err := backfillRange(tx)
	if err != nil || end == 0 {
		return &Result{}, err
	}
	entries, body := tx.Bucket(bEntries).Cursor(), tx.Bucket(bByBody)
	n := 0
	k, v := entries.Seek(u64(next))
	for ; k != nil && readU64(k) < end && n < c.MaxItems; k, v = entries.Next() {
		v, err := unseal(bEntries, k, v)
		if err != nil {
			return nil, err
		}
		r, err := decodeRecord(v)
		if err != nil {
			return nil, err
		}
		if err := putMark(body, version >= sumFromVersion, bByBody, bodyKey(r.Body, r.Seq)); err != nil {
			return nil, err
		}
		n++
	}
	if k == nil || readU64(k) >= end {
		meta := tx.Bucket(bMeta)
		if err := meta.Delete(kBackfillNext); err != nil {
			return nil, err
		}
		return &Result{Backfilled: n}, meta.Delete(kBackfillEnd)
	}
	return &Result{Backfilled: n, BackfillLeft: true}, putU64(tx, bMeta, kBackfillNext, readU64(k))
}

// backfillRange returns where the backfill goes on and where it ends; end
// 0 means no backfill is left.
func backfillRange(tx *bolt.Tx) (next, end uint64, err error) {
	if end, err = getU64(tx, bMeta, kBackfillEnd); err != nil || end == 0 {
		return 0, 0, err
	}
	next, err = getU64(tx, bMeta, kBackfillNext)
	return next, end, err
}

// BackfillPending reports whether entries stored before cluster version 4
// are still to be indexed by their body (OpBackfill).
func (f *FSM) BackfillPending() (bool, error) {
	var pending bool
	err := f.view(func(tx *bolt.Tx) error {
		_, end, err := backfillRange(tx)
		pending = end != 0
		return err
	})
	return pending, err
}

// findUnavailableRetry is the Retry-After of a find refused while the
// backfill runs: it indexes thousands of entries a second.
const findUnavailableRetry = 5 * time.Second

// Find returns the public entries whose body is exactly q.Body (q as
// restarea.FindQuery.Validate returns it), newest first. A page examines
// at most restarea.MaxFindScan entries with the body's fingerprint and
// ends, like a list page, before restarea.MaxPageBytes of entry text, so
// it may hold fewer than q.Limit entries: only a nil NextCursor ends the
// list. Before cluster version 4, and until every older entry is indexed,
// it answers CodeUnavailable: an empty answer would tell a client that
// its post was never stored.
func (f *FSM) Find(q restarea.FindQuery) (restarea.FindPage, error) {
	page := restarea.FindPage{Entries: []restarea.Entry{}}
	after, _, err := pageArgs(q.Cursor, q.Limit)
	if err != nil {
		return page, err
	}
	err = f.view(func(tx *bolt.Tx) error {
		if err := findAvailable(tx); err != nil {
			return err
		}
		fp := restarea.BodyFingerprint(q.Body)
		prefix := fp[:fingerprintLen]
		c := tx.Bucket(bByBody).Cursor()
		scanned, size := 0, 0
		var last uint64
		for k, v := seekPage(c, prefix, after, true); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
			if len(page.Entries) == q.Limit || scanned == restarea.MaxFindScan {
				page.NextCursor = cursorString(last)
				return nil
			}
			if _, err := unseal(bByBody, k, v); err != nil {
				return err
			}
			r, err := recordAt(tx, k[len(k)-8:])
			if err != nil {
				return err
			}
			if r == nil {
				return errMissing(fmt.Sprintf("seq %d", readU64(k[len(k)-8:])))
			}
			scanned++
			ok, err := findMatches(tx, r, q)
			if err != nil {
				return err
			}
			if !ok {
				last = r.Seq
				continue
			}
			if size += r.TextBytes(); len(page.Entries) > 0 && size > restarea.MaxPageBytes {
				page.NextCursor = cursorString(last)
				return nil
			}
			page.Entries = append(page.Entries, public(r))
			last = r.Seq
		}
		return nil
	})
	return page, err
}

// findAvailable refuses a find the fingerprints cannot answer yet.
func findAvailable(tx *bolt.Tx) error {
	version, err := readClusterVersion(tx)
	if err != nil {
		return err
	}
	if version < fingerprintFromVersion {
		return restarea.Errorf(restarea.CodeUnavailable,
			"finding a post by its body needs cluster version %d, and the cluster runs %d until an operator finalizes the upgrade (restarea admin finalize-upgrade); meanwhile search for it (GET /api/v1/search)",
			fingerprintFromVersion, version).WithRetryAfter(time.Minute)
	}
	next, end, err := backfillRange(tx)
	if err != nil {
		return err
	}
	if end != 0 {
		return restarea.Errorf(restarea.CodeUnavailable,
			"the entries stored before cluster version %d are still being indexed by their body (up to log index %d of %d); retry shortly",
			fingerprintFromVersion, next, end).WithRetryAfter(findUnavailableRetry)
	}
	return nil
}

// findMatches reports whether r answers q: the same body, every filter
// of q, and public (visible, and a reply only while its question is).
func findMatches(tx *bolt.Tx, r *record, q restarea.FindQuery) (bool, error) {
	switch {
	case r.Body != q.Body, !r.Visible,
		q.Type != "" && r.Type != q.Type,
		q.Actor != "" && r.Actor.Name != q.Actor,
		q.ParentID != "" && r.ParentID != q.ParentID,
		!q.Since.IsZero() && r.CreatedAt.Before(q.Since):
		return false, nil
	}
	if r.Type == restarea.TypeReply {
		return publicQuestion(tx, r.ParentID)
	}
	return true, nil
}
