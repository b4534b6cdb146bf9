package fsm

import (
	"github.com/restarea/restarea"
	bolt "go.etcd.io/bbolt"
)

// The reads below serve indexes derived from the state (package search):
// they follow the entries bucket by sequence number, and check what an
// index found against the state as it is now.

// SeqEntry is a stored entry with its sequence number (the log index of
// the post that created it). Hidden entries are included; RequestID is
// not.
type SeqEntry struct {
	restarea.Entry
	Seq uint64
}

// EntriesAfter returns up to limit stored entries whose sequence number is
// above after, in sequence order, and a watermark: every entry with a
// sequence number at or below it that the state holds is either returned
// or at or below after. The watermark is the applied index when the page
// reaches the end of the bucket, else the last sequence number returned.
func (f *FSM) EntriesAfter(after uint64, limit int) ([]SeqEntry, uint64, error) {
	if limit <= 0 {
		limit = 500
	}
	var out []SeqEntry
	var mark uint64
	err := f.view(func(tx *bolt.Tx) error {
		applied, err := getU64(tx, bMeta, kApplied)
		if err != nil {
			return err
		}
		c := tx.Bucket(bEntries).Cursor()
		k, v := c.Seek(u64(after + 1))
		for ; k != nil; k, v = c.Next() {
			if len(out) == limit {
				mark = out[len(out)-1].Seq
				return nil
			}
			v, err := unseal(bEntries, k, v)
			if err != nil {
				return err
			}
			r, err := decodeRecord(v)
			if err != nil {
				return err
			}
			e := r.Entry
			e.RequestID = ""
			out = append(out, SeqEntry{Entry: e, Seq: r.Seq})
		}
		mark = applied
		if mark < after {
			mark = after
		}
		return nil
	})
	return out, mark, err
}

// PublicEntries returns, of the given ids, those that are public now (not
// hidden, not deleted, not expired; a reply's question public too), as
// public reads show them.
func (f *FSM) PublicEntries(ids []string) (map[string]restarea.Entry, error) {
	out := make(map[string]restarea.Entry, len(ids))
	err := f.view(func(tx *bolt.Tx) error {
		for _, id := range ids {
			r, err := getRecord(tx, id)
			if err != nil {
				return err
			}
			if r == nil {
				continue
			}
			if vis, err := effectiveVisible(tx, r); err != nil {
				return err
			} else if vis {
				out[id] = public(r)
			}
		}
		return nil
	})
	return out, err
}

// Stored reports which of the given ids the state still holds, hidden or
// not (deleted and expired entries are gone).
func (f *FSM) Stored(ids []string) (map[string]bool, error) {
	out := make(map[string]bool, len(ids))
	err := f.view(func(tx *bolt.Tx) error {
		for _, id := range ids {
			seq, err := get(tx, bIDs, []byte(id))
			if err != nil {
				return err
			}
			if seq != nil {
				out[id] = true
			}
		}
		return nil
	})
	return out, err
}
