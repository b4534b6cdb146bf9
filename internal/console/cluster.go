package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/restarea/restarea"
)

// peerTimeout bounds the fetch of one member's own status.
const peerTimeout = 2 * time.Second

// memberView is one row of the cluster page.
type memberView struct {
	restarea.Member
	Leader, Self bool
	// Known is false when the member's own status could not be read;
	// Problem then says why.
	Known   bool
	Problem string
	State   string
	Term    uint64
	Applied uint64
	// Lag is how far the member's applied index is behind the leader's
	// commit index, as far as the two readings (taken moments apart) say.
	Lag uint64
}

// clusterView is the cluster page's data.
type clusterView struct {
	Status  restarea.ClusterStatus
	Members []memberView
	// LeaderCommit is the commit index lag is measured against, and
	// LeaderCommitFrom whose reading it is.
	LeaderCommit     uint64
	LeaderCommitFrom string
	// Others are the voters leadership can be handed to.
	Others   []string
	Fetching bool
}

// peerStatus is the part of a member's public GET /api/v1/cluster the
// page shows.
type peerStatus struct {
	NodeID       string `json:"node_id"`
	State        string `json:"state"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
}

// clusterPage is GET /admin/cluster: this node's view of the cluster
// (ClusterService.ClusterStatus) and, with Config.Peers, each member's
// own applied index read from its public status.
func (s *server) clusterPage(w http.ResponseWriter, r *http.Request, sess session) {
	st, err := s.cluster.ClusterStatus(r.Context())
	if err != nil {
		s.fail(w, r, sess, err)
		return
	}
	v := clusterView{Status: st, Fetching: s.peers != nil}
	statuses := s.memberStatuses(r.Context(), st)
	v.LeaderCommit, v.LeaderCommitFrom = st.CommitIndex, st.NodeID
	if ls, ok := statuses[st.LeaderID]; ok && ls.err == nil {
		v.LeaderCommit, v.LeaderCommitFrom = ls.CommitIndex, st.LeaderID
	}
	for _, m := range st.Members {
		mv := memberView{Member: m, Leader: m.ID == st.LeaderID, Self: m.ID == st.NodeID}
		if ps, ok := statuses[m.ID]; ok {
			if ps.err != nil {
				mv.Problem = ps.err.Error()
			} else {
				mv.Known, mv.State, mv.Term, mv.Applied = true, ps.State, ps.Term, ps.AppliedIndex
				if v.LeaderCommit > ps.AppliedIndex {
					mv.Lag = v.LeaderCommit - ps.AppliedIndex
				}
			}
		} else {
			mv.Problem = "not read (this node does not fetch its peers' status)"
		}
		v.Members = append(v.Members, mv)
		if m.ID != st.LeaderID && m.Suffrage == "voter" {
			v.Others = append(v.Others, m.ID)
		}
	}
	s.render(w, r, http.StatusOK, "cluster", view{Title: "Cluster", Nav: "cluster", CSRF: sess.csrf, Notice: doneNotice(r.URL.Query().Get("done")), Data: v})
}

type fetched struct {
	peerStatus
	err error
}

// memberStatuses reads every member's own status: this node's from st,
// the others' from their public URL, concurrently, each bounded by
// peerTimeout.
func (s *server) memberStatuses(ctx context.Context, st restarea.ClusterStatus) map[string]fetched {
	out := map[string]fetched{st.NodeID: {peerStatus: peerStatus{
		NodeID: st.NodeID, State: st.State, Term: st.Term, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex,
	}}}
	if s.peers == nil {
		return out
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range st.Members {
		if m.ID == st.NodeID {
			continue
		}
		wg.Go(func() {
			ps, err := s.fetchPeer(ctx, m)
			mu.Lock()
			out[m.ID] = fetched{ps, err}
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func (s *server) fetchPeer(ctx context.Context, m restarea.Member) (peerStatus, error) {
	if m.URL == "" {
		return peerStatus{}, fmt.Errorf("its URL is not known yet")
	}
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(m.URL, "/")+"/api/v1/cluster", nil)
	if err != nil {
		return peerStatus{}, fmt.Errorf("bad URL %q", m.URL)
	}
	resp, err := s.peers.Do(req)
	if err != nil {
		return peerStatus{}, fmt.Errorf("unreachable: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return peerStatus{}, fmt.Errorf("answered %s", resp.Status)
	}
	var body struct {
		Data peerStatus `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return peerStatus{}, fmt.Errorf("unreadable status: %v", err)
	}
	if body.Data.NodeID != m.ID {
		return peerStatus{}, fmt.Errorf("its URL answers as node %q", body.Data.NodeID)
	}
	return body.Data, nil
}

// transfer is POST /admin/cluster/transfer: to the chosen voter, or to
// any when none is chosen.
func (s *server) transfer(w http.ResponseWriter, r *http.Request, sess session) {
	to := r.PostForm.Get("id")
	if err := s.cluster.TransferLeadership(r.Context(), to); err != nil {
		s.fail(w, r, sess, err)
		return
	}
	s.log.Info("console: leadership transfer", "to", to, "session", sessionLabel(sess))
	http.Redirect(w, r, Prefix+"/cluster?done=transferred", http.StatusSeeOther)
}

// confirmRemove is GET /admin/cluster/remove?id=: the confirmation step.
func (s *server) confirmRemove(w http.ResponseWriter, r *http.Request, sess session) {
	st, err := s.cluster.ClusterStatus(r.Context())
	if err != nil {
		s.fail(w, r, sess, err)
		return
	}
	id := r.URL.Query().Get("id")
	for _, m := range st.Members {
		if m.ID == id {
			s.render(w, r, http.StatusOK, "confirm", view{Title: "Remove member?", Nav: "cluster", CSRF: sess.csrf, Data: confirmView{
				Verb: "Remove", Action: Prefix + "/cluster/remove", Cancel: Prefix + "/cluster", Member: &m, Danger: true,
				Question: "Really remove this member from the cluster? It stops voting and receiving the log at once (a leader first hands leadership over); it comes back only when it is started again with --join.",
			}})
			return
		}
	}
	s.render(w, r, http.StatusNotFound, "message", view{Title: "No such member", Nav: "cluster", CSRF: sess.csrf, Data: "No member of the cluster has this id."})
}

// removeMember is POST /admin/cluster/remove.
func (s *server) removeMember(w http.ResponseWriter, r *http.Request, sess session) {
	id := r.PostForm.Get("id")
	if err := s.cluster.RemoveMember(r.Context(), id); err != nil {
		s.fail(w, r, sess, err)
		return
	}
	s.log.Info("console: member removed", "id", id, "session", sessionLabel(sess))
	http.Redirect(w, r, Prefix+"/cluster?done=removed", http.StatusSeeOther)
}

// backup is GET /admin/backup: a consistent copy of the state file, as
// `restarea restore` takes it. A GET changes nothing, so the session is
// enough; no-store keeps it out of every cache.
func (s *server) backup(w http.ResponseWriter, r *http.Request, sess session) {
	name := "restarea-backup-" + s.now().UTC().Format("20060102-150405") + ".db"
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	n, err := s.cluster.WriteBackup(r.Context(), w)
	if err != nil {
		// Once bytes are out the status cannot change: the download is
		// cut short and the log says so.
		s.log.Error("console: backup failed", "bytes", n, "err", err)
		if n == 0 {
			s.fail(w, r, sess, err)
		}
		return
	}
	s.log.Info("console: backup downloaded", "bytes", n, "session", sessionLabel(sess))
}
