package fsm

import (
	"encoding/json"

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

func applyMember(tx *bolt.Tx, c *MemberCommand) (*Result, error) {
	b := tx.Bucket(bMembers)
	if c.Remove {
		return &Result{}, b.Delete([]byte(c.ID))
	}
	v, err := json.Marshal(c.MemberInfo)
	if err != nil {
		return nil, err
	}
	return &Result{}, b.Put([]byte(c.ID), v)
}

// Members returns the recorded member URLs by node id.
func (f *FSM) Members() (map[string]MemberInfo, error) {
	out := map[string]MemberInfo{}
	err := f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bMembers).ForEach(func(k, v []byte) error {
			var m MemberInfo
			if json.Unmarshal(v, &m) == nil {
				out[string(k)] = m
			}
			return nil
		})
	})
	return out, err
}
