package fsm

import (
	"encoding/json"
	"fmt"

	"github.com/restarea/restarea"
	bolt "go.etcd.io/bbolt"
)

func errMissing(id string) error {
	return fmt.Errorf("fsm: index names entry %s but it is not stored", id)
}

// applyVisibility hides or unhides an entry. Doing it twice is a no-op, so
// a retried admin command is harmless.
// Only a real change is audited.
func applyVisibility(tx *bolt.Tx, a *auditor, id string, visible bool) (*Result, error) {
	r, err := getRecord(tx, id)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return refuse(restarea.CodeNotFound, 0, "no stored entry has id %s", id), nil
	}
	var rec *restarea.AuditRecord
	if r.Visible != visible {
		on, err := sumOn(tx)
		if err != nil {
			return nil, err
		}
		r.Visible = visible
		if err := putRecord(tx, on, r); err != nil {
			return nil, err
		}
		if err := index(tx, on, r, visible); err != nil {
			return nil, err
		}
		action := restarea.AuditHide
		if visible {
			action = restarea.AuditUnhide
		}
		rec, err = a.write(tx, restarea.AuditRecord{
			Action: action, EntryID: r.ID, EntryType: r.Type,
			Changes: []restarea.AuditChange{change("visible", !visible, visible)},
		})
		if err != nil {
			return nil, err
		}
	}
	e := r.Entry
	return &Result{Entry: &e, Audit: rec}, nil
}

// applyDelete erases an entry and keeps a tombstone for its request_id, so
// replays get 410 until the tombstone expires. Deleting a deleted entry is
// a no-op, and not audited.
func applyDelete(tx *bolt.Tx, a *auditor, now int64, id string) (*Result, error) {
	if rid, err := get(tx, bTombIDs, []byte(id)); err != nil {
		return nil, err
	} else if rid != nil {
		return &Result{Entry: &restarea.Entry{ID: id}}, nil
	}
	r, err := getRecord(tx, id)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return refuse(restarea.CodeNotFound, 0, "no stored entry has id %s", id), nil
	}
	on, err := sumOn(tx)
	if err != nil {
		return nil, err
	}
	if err := removeEntry(tx, on, r); err != nil {
		return nil, err
	}
	t, err := json.Marshal(tombstone{ID: r.ID, ContentHash: contentHash(r.Content()), DeletedAt: now})
	if err != nil {
		return nil, err
	}
	if err := put(tx, bTombs, []byte(r.RequestID), t); err != nil {
		return nil, err
	}
	if err := put(tx, bTombIDs, []byte(r.ID), []byte(r.RequestID)); err != nil {
		return nil, err
	}
	if err := putMark(tx.Bucket(bTombExpiry), on, bTombExpiry, append(u64(uint64(now)), r.RequestID...)); err != nil {
		return nil, err
	}
	rec, err := a.write(tx, restarea.AuditRecord{
		Action: restarea.AuditDelete, EntryID: r.ID, EntryType: r.Type,
		Changes: []restarea.AuditChange{change("deleted", false, true), change("visible", r.Visible, false)},
	})
	if err != nil {
		return nil, err
	}
	return &Result{Entry: &restarea.Entry{ID: id}, Audit: rec}, nil
}

// removeEntry takes an entry out of every index and the entry bucket;
// on is sumOn of tx.
func removeEntry(tx *bolt.Tx, on bool, r *record) error {
	if r.Visible {
		if err := index(tx, on, r, false); err != nil {
			return err
		}
	}
	for _, d := range []struct {
		b []byte
		k []byte
	}{
		{bEntries, u64(r.Seq)},
		{bIDs, []byte(r.ID)},
		{bByRequest, []byte(r.RequestID)},
		{bExpiry, timeSeqKey(r.CreatedAt.UnixNano(), r.Seq)},
		{bByBody, bodyKey(r.Body, r.Seq)}, // absent before cluster version 4: a no-op
	} {
		if err := tx.Bucket(d.b).Delete(d.k); err != nil {
			return err
		}
	}
	return addCounter(tx, on, kEntries, -1)
}

// applySettings applies a settings patch. Limits an operator has set are
// never overwritten by a node's configured defaults. A patch that changes
// no setting in force is not audited (even when it marks a limit as set by
// an operator).
func applySettings(tx *bolt.Tx, a *auditor, c *SettingsCommand) (*Result, error) {
	s, err := getSettings(tx)
	if err != nil {
		return nil, err
	}
	before := s.Settings
	p := c.Patch
	if c.FromConfig {
		if s.OperatorSetPerSource {
			p.PerSourceLimit = nil
		}
		if s.OperatorSetGlobal {
			p.GlobalLimit = nil
		}
		p.WritesDisabled = nil
	} else {
		s.OperatorSetPerSource = s.OperatorSetPerSource || p.PerSourceLimit != nil
		s.OperatorSetGlobal = s.OperatorSetGlobal || p.GlobalLimit != nil
	}
	for _, l := range []*restarea.Limit{p.PerSourceLimit, p.GlobalLimit} {
		if l != nil {
			if err := l.Validate("limit"); err != nil {
				return refuse(restarea.CodeInvalidRequest, 0, "%s", restarea.ErrorMessage(err)), nil
			}
		}
	}
	s.Settings = p.Apply(s.Settings)
	if err := putSettings(tx, s); err != nil {
		return nil, err
	}
	var rec *restarea.AuditRecord
	if changes := settingsChanges(before, s.Settings); len(changes) > 0 {
		var err error
		rec, err = a.write(tx, restarea.AuditRecord{Action: restarea.AuditSettings, Changes: changes, FromConfig: c.FromConfig})
		if err != nil {
			return nil, err
		}
	}
	out := s.Settings
	return &Result{Settings: &out, Audit: rec}, nil
}
