package api

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/decode"
	"github.com/restarea/restarea/internal/httpx"
)

// publicMember is a member as GET /api/v1/cluster shows it to anyone: who
// it is and whether it votes, not where it listens.
type publicMember struct {
	ID       string `json:"id"`
	Suffrage string `json:"suffrage"`
}

// publicStatus is restarea.ClusterStatus without the addresses: the raft
// addresses and HTTP URLs of the members (the leader's URL too) are for
// operators. The rest (leader id, term, indexes, log format, member ids)
// stays public, for load balancers, probes and the tools. The build
// (version, commit) is public too: the MCP handshake already tells anyone
// the version, and a rolling upgrade is watched node by node through it.
type publicStatus struct {
	NodeID       string `json:"node_id"`
	Version      string `json:"version"`
	Commit       string `json:"commit"`
	State        string `json:"state"`
	LeaderID     string `json:"leader_id"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	LogFormat    int    `json:"log_format"`
	// ClusterVersion is public like the log format; which release each
	// member runs is for operators.
	ClusterVersion int            `json:"cluster_version"`
	Members        []publicMember `json:"members"`
	// Clock says whether this node's clock agrees with the cluster's.
	Clock *restarea.ClockStatus `json:"clock,omitempty"`
}

// clusterStatus is GET /api/v1/cluster. A caller with the admin bearer
// token gets the whole status, addresses included (as the admin route
// /api/v1/admin/cluster/members does); anyone else gets publicStatus. A
// wrong token is not refused here (the route is public) but counts as a
// failed admin authentication all the same, under the same throttle.
func (s *server) clusterStatus(w http.ResponseWriter, r *http.Request) {
	st, err := s.cluster.ClusterStatus(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if st.Members == nil {
		st.Members = []restarea.Member{}
	}
	if s.admin != nil && r.Header.Get("Authorization") != "" {
		// A throttled source is not told whether its token was right:
		// it gets the public view, as with a wrong token.
		if res, _ := s.checkToken(r); res == tokenValid {
			httpx.WriteData(w, http.StatusOK, st)
			return
		}
	}
	pub := publicStatus{
		NodeID: st.NodeID, Version: st.Version, Commit: st.Commit, State: st.State, LeaderID: st.LeaderID, Term: st.Term,
		CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex, LogFormat: st.LogFormat,
		ClusterVersion: st.ClusterVersion, Clock: st.Clock, Members: make([]publicMember, len(st.Members)),
	}
	for i, m := range st.Members {
		pub.Members[i] = publicMember{ID: m.ID, Suffrage: m.Suffrage}
	}
	httpx.WriteData(w, http.StatusOK, pub)
}

// clusterMembers is GET /api/v1/admin/cluster/members.
func (s *server) clusterMembers(w http.ResponseWriter, r *http.Request) {
	st, err := s.cluster.ClusterStatus(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpx.WriteData(w, http.StatusOK, struct {
		Members  []restarea.Member `json:"members"`
		LeaderID string            `json:"leader_id"`
	}{nonNilMembers(st.Members), st.LeaderID})
}

func nonNilMembers(m []restarea.Member) []restarea.Member {
	if m == nil {
		return []restarea.Member{}
	}
	return m
}

// removeMember is DELETE /api/v1/admin/cluster/members/{id}.
func (s *server) removeMember(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" || len(id) > 256 {
		s.fail(w, r, restarea.Errorf(restarea.CodeInvalidRequest, "id must name a member"))
		return
	}
	if err := s.cluster.RemoveMember(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	httpx.WriteData(w, http.StatusOK, struct {
		ID      string `json:"id"`
		Removed bool   `json:"removed"`
	}{id, true})
}

// transferLeadership is POST /api/v1/admin/cluster/leadership-transfer
// with an optional body {"id": "..."} naming the new leader.
func (s *server) transferLeadership(w http.ResponseWriter, r *http.Request) {
	data, err := s.readBody(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req struct {
		ID string `json:"id,omitempty"`
	}
	if len(bytes.TrimSpace(data)) > 0 {
		if err := decode.JSON(data, &req); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	if err := s.cluster.TransferLeadership(r.Context(), strings.TrimSpace(req.ID)); err != nil {
		s.fail(w, r, err)
		return
	}
	st, err := s.cluster.ClusterStatus(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpx.WriteData(w, http.StatusOK, st)
}

// finalizeUpgrade is POST /api/v1/admin/cluster/finalize-upgrade (no
// body): the leader raises the cluster version to the newest every member
// knows. 200 with the result (unchanged when already there), 409 naming
// each member that must be upgraded first.
func (s *server) finalizeUpgrade(w http.ResponseWriter, r *http.Request) {
	data, err := s.readBody(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(bytes.TrimSpace(data)) > 0 {
		var none struct{}
		if err := decode.JSON(data, &none); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	res, err := s.cluster.FinalizeUpgrade(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if res.Status.Members == nil {
		res.Status.Members = []restarea.Member{}
	}
	httpx.WriteData(w, http.StatusOK, res)
}

// backup is GET /api/v1/admin/backup: a consistent copy of the state file,
// streamed.
func (s *server) backup(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="restarea-backup.db"`)
	w.Header().Set("Cache-Control", "no-store")
	if _, err := s.cluster.WriteBackup(r.Context(), w); err != nil {
		// Headers are gone; the cut stream is refused by restore's check.
		s.log.Error("backup stream failed", "err", err)
		panic(http.ErrAbortHandler)
	}
}
