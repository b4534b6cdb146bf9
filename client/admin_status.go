package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/restarea/restarea"
)

// NodeView is one member as it describes itself: the answer of its own
// GET /api/v1/cluster, or why there is none.
type NodeView struct {
	// ID, URL and Suffrage are the member as the cluster lists it.
	ID       string `json:"id"`
	URL      string `json:"url"`
	Suffrage string `json:"suffrage"`
	// Reachable is true when the node answered with its view, as itself;
	// otherwise Error says what happened. Error may also be set on a
	// reachable node, for what is amiss with its answer.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// Status is the node's own view (nil when unreachable).
	Status *restarea.ClusterStatus `json:"status,omitempty"`
	// Lag is the leader's commit index minus this node's applied index,
	// both as the nodes reported them (0 when the node is ahead of a
	// leader read a moment earlier); nil when no leader answered.
	Lag *uint64 `json:"lag,omitempty"`
}

// ClusterView is every member's own view of the cluster.
type ClusterView struct {
	// LeaderID is the leader according to the node that listed the
	// members; LeaderTerm and LeaderCommit come from the node that says it
	// leads (0 when none answered as leader).
	LeaderID     string     `json:"leader_id"`
	LeaderTerm   uint64     `json:"leader_term"`
	LeaderCommit uint64     `json:"leader_commit_index"`
	Nodes        []NodeView `json:"nodes"`
}

// Status lists the members (from the first server that answers, with
// their URLs; the admin route, so a wrong token is a 401) and asks every
// member for its own view, all at once, one request each bounded by
// Options.AttemptTimeout. A member that does not answer is marked, not an
// error: the error is only for a member list that could not be had.
func (a *Admin) Status(ctx context.Context) (ClusterView, error) {
	st, err := a.Members(ctx)
	if err != nil {
		return ClusterView{}, err
	}
	view := ClusterView{LeaderID: st.LeaderID, Nodes: make([]NodeView, len(st.Members))}
	var wg sync.WaitGroup
	for i, m := range st.Members {
		view.Nodes[i] = NodeView{ID: m.ID, URL: m.URL, Suffrage: m.Suffrage}
		wg.Add(1)
		go func(v *NodeView) {
			defer wg.Done()
			a.nodeView(ctx, v)
		}(&view.Nodes[i])
	}
	wg.Wait()
	// The leader is the node that says so; with two (a deposed leader
	// that has not noticed yet), the one of the higher term.
	var leader *restarea.ClusterStatus
	for _, v := range view.Nodes {
		if v.Status != nil && v.Status.State == "leader" && (leader == nil || v.Status.Term > leader.Term) {
			leader = v.Status
		}
	}
	if leader != nil {
		view.LeaderTerm, view.LeaderCommit = leader.Term, leader.CommitIndex
		for i := range view.Nodes {
			if s := view.Nodes[i].Status; s != nil {
				lag := uint64(0)
				if leader.CommitIndex > s.AppliedIndex {
					lag = leader.CommitIndex - s.AppliedIndex
				}
				view.Nodes[i].Lag = &lag
			}
		}
	}
	return view, nil
}

// nodeView fills v with the node's answer to GET /api/v1/cluster: one
// request, no failover (the point is this node's view).
func (a *Admin) nodeView(ctx context.Context, v *NodeView) {
	base := strings.TrimRight(v.URL, "/")
	if base == "" {
		v.Error = "the cluster has no URL recorded for this member"
		return
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		v.Error = fmt.Sprintf("recorded URL %q is not http(s)", v.URL)
		return
	}
	if !a.c.opts.AllowPlainHTTP {
		if err := checkPlainHTTP(base); err != nil {
			v.Error = "not asked: plain http:// beyond loopback would send the token in clear (use https://, or --insecure)"
			return
		}
	}
	ans := a.c.do(ctx, base, http.MethodGet, "/api/v1/cluster", nil, nil)
	switch {
	case ans.lost != nil:
		err := ans.lost
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the method and URL are in the row already
		}
		v.Error = "unreachable: " + err.Error()
		return
	case ans.err != nil:
		e := withCode(ans)
		v.Error = fmt.Sprintf("answered %d %s: %s", ans.status, e.Code, e.Message)
		return
	}
	var st restarea.ClusterStatus
	if err := decodeData(ans.data, &st); err != nil {
		v.Error = err.Error()
		return
	}
	if st.NodeID != v.ID {
		// The recorded URL leads to another node (a reused address, a
		// proxy in the way): its view is not this member's.
		v.Error = fmt.Sprintf("the URL answered as node %q", st.NodeID)
		return
	}
	if publicView(st) {
		// Still this node's view, but its token differs from the one the
		// listing node accepted: worth saying.
		v.Error = "this node did not accept the admin token (it answered its public view)"
	}
	v.Reachable, v.Status = true, &st
}
