package chaos

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/restarea/restarea"
)

// VTwoLeaders is the violation of raft's election safety: two nodes
// claimed leadership in one term.
const VTwoLeaders = "two_leaders"

// VMembership says the healed cluster's members did not converge: a
// node's member list is not the set of the target's nodes (a removed or
// wiped id is still listed, a rejoined one is missing, nodes disagree).
const VMembership = "membership_diverged"

// termLog records, for every term, the nodes seen claiming to lead it.
// Only a node's claim about itself counts (state "leader" and its own id
// as leader_id): a follower's leader_id may still name the leader of the
// previous term for a moment after a vote request raised its term, and
// would read as a second leader of the new term.
type termLog struct {
	mu      sync.Mutex
	leaders map[uint64][]string
	firstNs map[uint64]int64
}

func newTermLog() *termLog {
	return &termLog{leaders: map[uint64][]string{}, firstNs: map[uint64]int64{}}
}

// record adds the leadership claims of sts, polled at nowNs.
func (t *termLog) record(sts []*restarea.ClusterStatus, nowNs int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, st := range sts {
		if st == nil || st.State != "leader" || st.LeaderID != st.NodeID || st.NodeID == "" {
			continue
		}
		ids := t.leaders[st.Term]
		if !slices.Contains(ids, st.NodeID) {
			t.leaders[st.Term] = append(ids, st.NodeID)
		}
		if _, ok := t.firstNs[st.Term]; !ok {
			t.firstNs[st.Term] = nowNs
		}
	}
}

// terms returns how many terms had a leader seen.
func (t *termLog) terms() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.leaders)
}

// violations returns one VTwoLeaders per term that had more than one
// leader claim.
func (t *termLog) violations() []Violation {
	t.mu.Lock()
	defer t.mu.Unlock()
	var terms []uint64
	for term, ids := range t.leaders {
		if len(ids) > 1 {
			terms = append(terms, term)
		}
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i] < terms[j] })
	var vs []Violation
	for _, term := range terms {
		ids := slices.Clone(t.leaders[term])
		sort.Strings(ids)
		vs = append(vs, violation(VTwoLeaders, "", -1, "term %d had leaders %v (first seen %s into the run)",
			term, ids, time.Duration(t.firstNs[term]).Round(time.Millisecond)))
	}
	return vs
}

// checkMembers asks every node of urls for its members and reports the
// nodes whose member set is not want (the ids the target's nodes run
// under) or that list a non-voter. It retries for a while: a removal or
// a join may still be in the last node's log when the cluster settled.
func checkMembers(ctx context.Context, hc *http.Client, urls []string, token string, want []string, wait time.Duration) []Violation {
	want = slices.Clone(want)
	sort.Strings(want)
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var vs []Violation
	// answered keeps each node's last verdict from an answer: a poll cut
	// off by the end of the wait says nothing new about that node.
	answered := make([]*Violation, len(urls))
	for range maxPolls {
		vs = vs[:0]
		for i, u := range urls {
			var st restarea.ClusterStatus
			cctx, c := context.WithTimeout(ctx, 5*time.Second)
			err := getData(cctx, hc, u+"/api/v1/cluster", token, &st)
			c()
			if err != nil {
				if ctx.Err() != nil && answered[i] != nil {
					if answered[i].Kind != "" {
						vs = append(vs, *answered[i])
					}
					continue
				}
				vs = append(vs, violation(VMembership, "", i, "cluster status: %v", err))
				continue
			}
			answered[i] = &Violation{}
			var got []string
			for _, m := range st.Members {
				id := m.ID
				if m.Suffrage != "voter" {
					id += " (" + m.Suffrage + ")"
				}
				got = append(got, id)
			}
			sort.Strings(got)
			if !slices.Equal(got, want) {
				v := violation(VMembership, "", i, "%s lists members %v, want %v", st.NodeID, got, want)
				answered[i] = &v
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 || !sleep(ctx, 250*time.Millisecond) {
			break
		}
	}
	return vs
}

// memberIDs returns the ids the nodes of urls report as their own; a
// node that does not answer yields an error.
func memberIDs(ctx context.Context, hc *http.Client, urls []string) ([]string, error) {
	var ids []string
	for i, st := range statusAll(ctx, hc, urls, 5*time.Second) {
		if st == nil || st.NodeID == "" {
			return nil, fmt.Errorf("node %d does not answer", i)
		}
		ids = append(ids, st.NodeID)
	}
	return ids, nil
}
