package fsm

import (
	"encoding/json"

	"github.com/restarea/restarea"

	bolt "go.etcd.io/bbolt"
)

// MemberInfo is what the cluster knows about a node besides its raft
// address: the base URL of its HTTP API, so any node can name the
// leader's URL and list its peers.
type MemberInfo struct {
	ID  string `json:"id"`
	URL string `json:"url"`
}

// MemberCommand records (or, with Remove, forgets) a member's URL.
type MemberCommand struct {
	MemberInfo
	Remove bool `json:"remove,omitempty"`
}

// applyMember records or forgets a member's URL. A member seen for the
// first time is audited as member_add, a new URL as member_update, and
// forgetting a recorded member as member_remove; a command that changes
// nothing (a retried remove, an unchanged URL) is not audited.
func applyMember(tx *bolt.Tx, a *auditor, c *MemberCommand) (*Result, error) {
	b := tx.Bucket(bMembers)
	var prev *MemberInfo
	v, err := get(tx, bMembers, []byte(c.ID))
	if err != nil {
		return nil, err
	}
	if v != nil {
		var m MemberInfo
		if json.Unmarshal(v, &m) == nil {
			prev = &m
		}
	}
	var rec restarea.AuditRecord
	if c.Remove {
		if err := b.Delete([]byte(c.ID)); err != nil {
			return nil, err
		}
		if prev == nil {
			return &Result{}, nil
		}
		rec = restarea.AuditRecord{Action: restarea.AuditMemberRemove, Changes: []restarea.AuditChange{change("url", prev.URL, nil)}}
	} else {
		v, err := json.Marshal(c.MemberInfo)
		if err != nil {
			return nil, err
		}
		if err := put(tx, bMembers, []byte(c.ID), v); err != nil {
			return nil, err
		}
		switch {
		case prev == nil:
			rec = restarea.AuditRecord{Action: restarea.AuditMemberAdd, Changes: []restarea.AuditChange{change("url", nil, c.URL)}}
		case prev.URL != c.URL:
			rec = restarea.AuditRecord{Action: restarea.AuditMemberUpdate, Changes: []restarea.AuditChange{change("url", prev.URL, c.URL)}}
		default:
			return &Result{}, nil
		}
	}
	rec.MemberID = c.ID
	out, err := a.write(tx, rec)
	return &Result{Audit: out}, err
}

// Members returns the recorded member URLs by node id.
func (f *FSM) Members() (map[string]MemberInfo, error) {
	out := map[string]MemberInfo{}
	err := f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bMembers).ForEach(func(k, v []byte) error {
			v, err := unseal(bMembers, k, v)
			if err != nil {
				return err
			}
			var m MemberInfo
			if json.Unmarshal(v, &m) == nil {
				out[string(k)] = m
			}
			return nil
		})
	})
	return out, err
}
