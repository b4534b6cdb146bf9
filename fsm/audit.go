package fsm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/restarea/restarea"
	bolt "go.etcd.io/bbolt"
)

// AuditCommand records an operator action the state machine does not
// itself perform: a leadership transfer, which raft carries out outside
// the log. The node that handed leadership over proposes it afterwards.
type AuditCommand struct {
	Action restarea.AuditAction `json:"action"`
	// MemberID is the new leader ("" when it was not known in time).
	MemberID string `json:"member_id,omitempty"`
	// From is the leader before the transfer.
	From string `json:"from,omitempty"`
}

// auditor writes the audit record of the command being applied. It is
// nil before log format 3 (see OpEnableLogV3): then nothing is recorded,
// as the binaries that first applied those commands recorded nothing.
type auditor struct {
	index  uint64 // the command's log index: the record's key
	now    int64  // the state machine's clock for the command
	source string // Command.Origin
}

// write stores rec, stamped with the command's index, time and source,
// and returns it as stored. A nil auditor writes nothing.
func (a *auditor) write(tx *bolt.Tx, rec restarea.AuditRecord) (*restarea.AuditRecord, error) {
	if a == nil {
		return nil, nil
	}
	rec.Seq = a.index
	rec.Time = time.Unix(0, a.now).UTC()
	rec.Source = a.source
	if rec.Changes == nil {
		rec.Changes = []restarea.AuditChange{}
	}
	v, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("fsm: audit record: %w", err)
	}
	tx.Bucket(bAudit).FillPercent = 0.95 // keys only grow (log indexes)
	if err := put(tx, bAudit, u64(a.index), v); err != nil {
		return nil, err
	}
	return &rec, nil
}

// change describes one field that went from before to after (nil: the
// field did not exist on that side).
func change(field string, before, after any) restarea.AuditChange {
	return restarea.AuditChange{Field: field, Before: rawJSON(before), After: rawJSON(after)}
}

func rawJSON(v any) json.RawMessage {
	if v == nil {
		return json.RawMessage("null")
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Only bools, strings and limits are recorded, which always marshal.
		return json.RawMessage("null")
	}
	return b
}

// settingsChanges lists the settings that differ between before and after.
func settingsChanges(before, after restarea.Settings) []restarea.AuditChange {
	var out []restarea.AuditChange
	if before.WritesDisabled != after.WritesDisabled {
		out = append(out, change("writes_disabled", before.WritesDisabled, after.WritesDisabled))
	}
	if before.PerSourceLimit != after.PerSourceLimit {
		out = append(out, change("per_source_limit", before.PerSourceLimit, after.PerSourceLimit))
	}
	if before.GlobalLimit != after.GlobalLimit {
		out = append(out, change("global_limit", before.GlobalLimit, after.GlobalLimit))
	}
	return out
}

// applyAudit records a leadership transfer, the one action recorded by a
// command of its own.
func applyAudit(tx *bolt.Tx, a *auditor, c *AuditCommand) (*Result, error) {
	if c.Action != restarea.AuditLeadershipTransfer {
		return refuse(restarea.CodeInvalidRequest, 0, "audit command: action %q is recorded by its own command", c.Action), nil
	}
	if a == nil {
		return refuse(restarea.CodeInvalidRequest, 0, "audit command before log format 3"), nil
	}
	var from, to any
	if c.From != "" {
		from = c.From
	}
	if c.MemberID != "" {
		to = c.MemberID
	}
	rec, err := a.write(tx, restarea.AuditRecord{
		Action: c.Action, MemberID: c.MemberID,
		Changes: []restarea.AuditChange{change("leader", from, to)},
	})
	return &Result{Audit: rec}, err
}

// expireAudit drops up to max audit records older than cut (Unix nanos).
// Records are keyed by log index and the state machine's clock never goes
// back, so they are in time order: the scan stops at the first young one.
func expireAudit(tx *bolt.Tx, cut int64, max int) (int, error) {
	b := tx.Bucket(bAudit)
	var keys [][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil && len(keys) < max; k, v = c.Next() {
		var r struct {
			Time time.Time `json:"time"`
		}
		v, err := unseal(bAudit, k, v)
		if err != nil {
			return 0, err
		}
		if err := json.Unmarshal(v, &r); err != nil {
			return 0, fmt.Errorf("fsm: stored audit record %d: %w", readU64(k), err)
		}
		if r.Time.UnixNano() >= cut {
			break
		}
		keys = append(keys, bytes.Clone(k)) // deletes may move what k points at
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

// Audit returns the audit trail, newest first. The cursor is the opaque
// encoding of the last record's sequence number of the previous page.
func (f *FSM) Audit(cursor string, limit int) (restarea.AuditPage, error) {
	page := restarea.AuditPage{Records: []restarea.AuditRecord{}}
	after, limit, err := pageArgs(cursor, limit)
	if err != nil {
		return page, err
	}
	err = f.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bAudit).Cursor()
		var k, v []byte
		if after == nil {
			k, v = c.Last()
		} else {
			c.Seek(after)
			k, v = c.Prev()
		}
		for ; k != nil; k, v = c.Prev() {
			if len(page.Records) == limit {
				page.NextCursor = cursorString(page.Records[limit-1].Seq)
				return nil
			}
			var r restarea.AuditRecord
			v, err := unseal(bAudit, k, v)
			if err != nil {
				return err
			}
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("fsm: stored audit record %d: %w", readU64(k), err)
			}
			page.Records = append(page.Records, r)
		}
		return nil
	})
	return page, err
}
