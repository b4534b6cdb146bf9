package fsm

import (
	"bytes"
	"encoding/json"

	bolt "go.etcd.io/bbolt"
)

// applyExpire removes entries created before now-Retention and tombstones
// older than now-TombstoneRetention (docs/contract.md §6). Afterwards their
// request_ids are forgotten: that is the documented end of idempotency.
// Audit records older than Retention go too.
func applyExpire(tx *bolt.Tx, now int64, c *ExpireCommand) (*Result, error) {
	max := c.MaxItems
	if max <= 0 {
		max = 1000
	}
	n := 0
	if c.Retention > 0 {
		cut := now - int64(c.Retention)
		cur := tx.Bucket(bExpiry).Cursor()
		var seqs [][]byte
		for k, v := cur.First(); k != nil && len(seqs) < max && int64(readU64(k[:8])) < cut; k, v = cur.Next() {
			if _, err := unseal(bExpiry, k, v); err != nil {
				return nil, err
			}
			seqs = append(seqs, bytes.Clone(k[8:16]))
		}
		on, err := sumOn(tx)
		if err != nil {
			return nil, err
		}
		for _, seq := range seqs {
			r, err := recordAt(tx, seq)
			if err != nil {
				return nil, err
			}
			if r == nil {
				continue
			}
			if err := removeEntry(tx, on, r); err != nil {
				return nil, err
			}
			n++
		}
	}
	if c.TombstoneRetention > 0 {
		cut := now - int64(c.TombstoneRetention)
		cur := tx.Bucket(bTombExpiry).Cursor()
		var keys [][]byte
		for k, v := cur.First(); k != nil && len(keys) < max && int64(readU64(k[:8])) < cut; k, v = cur.Next() {
			if _, err := unseal(bTombExpiry, k, v); err != nil {
				return nil, err
			}
			keys = append(keys, bytes.Clone(k))
		}
		for _, k := range keys {
			reqID := k[8:]
			v, err := get(tx, bTombs, reqID)
			if err != nil {
				return nil, err
			}
			if v != nil {
				var t tombstone
				if err := json.Unmarshal(v, &t); err == nil {
					if err := tx.Bucket(bTombIDs).Delete([]byte(t.ID)); err != nil {
						return nil, err
					}
				}
				if err := tx.Bucket(bTombs).Delete(reqID); err != nil {
					return nil, err
				}
			}
			if err := tx.Bucket(bTombExpiry).Delete(k); err != nil {
				return nil, err
			}
			n++
		}
	}
	if c.Retention > 0 {
		// The audit trail lives as long as the entries it is about.
		k, err := expireAudit(tx, now-int64(c.Retention), max)
		if err != nil {
			return nil, err
		}
		n += k
	}
	s, err := getSettings(tx)
	if err != nil {
		return nil, err
	}
	if _, err := pruneSources(tx, now, s.PerSourceLimit.Window(), max); err != nil {
		return nil, err
	}
	return &Result{Expired: n}, nil
}

// ExpiryDue counts the stored entries created before the Unix time before
// (nanoseconds), what an expiry pass at retention now-before would remove,
// counting at most limit of them (it walks the expiry index from its
// oldest end, so its cost is bounded by limit).
func (f *FSM) ExpiryDue(before int64, limit int) (int, error) {
	n := 0
	err := f.view(func(tx *bolt.Tx) error {
		cur := tx.Bucket(bExpiry).Cursor()
		for k, v := cur.First(); k != nil && n < limit && int64(readU64(k[:8])) < before; k, v = cur.Next() {
			if _, err := unseal(bExpiry, k, v); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
