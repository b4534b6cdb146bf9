package cluster

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// AddVoter makes id a voter at addr. It is idempotent: a voter already at
// addr is left alone, a known id with a new address is updated, and a
// different id at the same address (a node whose data was wiped) is
// removed first.
func AddVoter(r *raft.Raft, id, addr string, timeout time.Duration) error {
	f := r.GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	for _, s := range f.Configuration().Servers {
		switch {
		case string(s.ID) == id && string(s.Address) == addr && s.Suffrage == raft.Voter:
			return nil
		case string(s.ID) != id && string(s.Address) == addr:
			if err := r.RemoveServer(s.ID, 0, timeout).Error(); err != nil {
				return fmt.Errorf("remove stale server %s at %s: %w", s.ID, addr, err)
			}
		}
	}
	return r.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout).Error()
}

// Members lists the raft configuration with the URLs recorded in the
// state, sorted by id.
func Members(r *raft.Raft, urls map[string]fsm.MemberInfo) ([]restarea.Member, error) {
	f := r.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	var out []restarea.Member
	for _, s := range f.Configuration().Servers {
		out = append(out, restarea.Member{
			ID: string(s.ID), RaftAddr: string(s.Address), URL: urls[string(s.ID)].URL,
			Suffrage: strings.ToLower(s.Suffrage.String()),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Voters counts the voters in the configuration.
func Voters(r *raft.Raft) int {
	f := r.GetConfiguration()
	if f.Error() != nil {
		return 0
	}
	n := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			n++
		}
	}
	return n
}
