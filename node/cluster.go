package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/cluster"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/transport"
)

var (
	_ cluster.Backend         = (*Node)(nil)
	_ restarea.ClusterService = (*Node)(nil)
)

// startCluster serves the internal channel and, for a node given --join,
// starts joining (or forming, with --bootstrap-expect) in the background.
func (n *Node) startCluster() {
	n.peers = &cluster.Client{
		Internal: n.mux.HTTPClient(0),
		Public:   n.PeerHTTPClient(10 * time.Second),
		Secret:   n.cfg.ClusterSecret,
	}
	n.intSrv = cluster.NewInternalServer(cluster.InternalHandler(n, n.guard))
	go n.intSrv.Serve(n.mux.RPCListener())
	if len(n.cfg.JoinURLs) > 0 {
		n.wg.Add(1)
		go n.formOrJoin()
	}
}

// PeerHTTPClient returns a client for other nodes' public ports, bounded
// by timeout per request: it verifies their https:// certificates with
// Config.PublicClientTLS (the system's roots when nil).
func (n *Node) PeerHTTPClient(timeout time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if n.cfg.PublicClientTLS != nil {
		tr.TLSClientConfig = n.cfg.PublicClientTLS.Clone()
	}
	return &http.Client{Timeout: timeout, Transport: tr}
}

// JoinHandler serves the join protocol's endpoints on the public port
// (cluster.PathJoin, cluster.PathPeer): the way a new node reaches a member
// before it has a place on the raft port.
func (n *Node) JoinHandler() http.Handler { return cluster.PublicHandler(n, n.guard) }

// formOrJoin brings a node given --join into its cluster: a fresh node
// forms one with its peers (--bootstrap-expect) or joins; a node with
// state announces itself, which updates its address and URL if they
// changed. It retries until it succeeds or the node stops.
func (n *Node) formOrJoin() {
	defer n.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-n.stop; cancel() }()
	defer cancel()
	if !n.hasState.Load() && n.cfg.BootstrapExpect > 1 {
		plan, err := cluster.Discover(ctx, n.peers, n.Peer(), n.cfg.JoinURLs, n.cfg.BootstrapExpect, n.log)
		if err != nil {
			return
		}
		if plan.Bootstrap != nil {
			if err := n.bootstrap(plan.Bootstrap); err != nil {
				n.log.Error("bootstrap failed", "err", err)
				return
			}
		}
	}
	req := cluster.JoinRequest{ID: n.id, RaftAddr: n.RaftAddr(), URL: n.AdvertiseURL(), LogFormat: fsm.LogFormatMax,
		ClusterVersionMax: n.cfg.ClusterVersionMax}
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		for _, u := range n.cfg.JoinURLs {
			if u = strings.TrimRight(u, "/"); u == n.URL() || u == n.AdvertiseURL() {
				continue
			}
			jctx, jcancel := context.WithTimeout(ctx, 15*time.Second)
			err := n.peers.JoinVia(jctx, u, req)
			jcancel()
			if err == nil {
				n.log.Info("joined the cluster", "via", u)
				return
			}
			level := n.log.Debug
			if attempt%10 == 3 {
				level = n.log.Warn
			}
			level("join attempt failed", "via", u, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if backoff < 5*time.Second {
			backoff *= 2
		}
	}
}

func (n *Node) leaderAddr() (string, error) {
	addr, _ := n.raft.LeaderWithID()
	if addr == "" {
		return "", errNotApplied
	}
	return string(addr), nil
}

func (n *Node) readIndexFromLeader(ctx context.Context) (uint64, error) {
	addr, err := n.leaderAddr()
	if err != nil {
		return 0, unavailable("no leader for a strong read")
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.ApplyTimeout)
	defer cancel()
	idx, err := n.peers.ReadIndex(ctx, addr)
	if errors.Is(err, cluster.ErrNotApplied) {
		return 0, unavailable("the leader changed during a strong read; retry")
	}
	return idx, n.peerRefused(err)
}

// ApplyLeader applies a forwarded command; only the leader does.
func (n *Node) ApplyLeader(ctx context.Context, cmd *fsm.Command) (*fsm.Result, error) {
	if !n.IsLeader() || n.diskTrouble() != nil {
		// A leader that cannot write its disk is handing leadership over
		// (diskfull.go): the follower waits for the next one.
		return nil, cluster.ErrNotLeader
	}
	res, err := n.applyLocal(ctx, cmd)
	if errors.Is(err, errNotApplied) {
		return nil, cluster.ErrNotLeader
	}
	return res, err
}

// ReadIndex confirms leadership and returns the commit index a strong read
// must wait for.
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) {
	if !n.IsLeader() {
		return 0, cluster.ErrNotLeader
	}
	idx, err := n.leaderReadIndex()
	if err != nil {
		return 0, cluster.ErrNotLeader
	}
	return idx, nil
}

// JoinLeader makes a node a voter and records its URL.
func (n *Node) JoinLeader(ctx context.Context, req cluster.JoinRequest) error {
	if !n.IsLeader() {
		return cluster.ErrNotLeader
	}
	if req.ID == "" || req.RaftAddr == "" {
		return restarea.Errorf(restarea.CodeInvalidRequest, "join needs id and raft_addr")
	}
	n.format.mu.Lock()
	defer n.format.mu.Unlock()
	if err := n.admitJoin(req.ID, req.LogFormat, req.ClusterVersionMax); err != nil {
		return err
	}
	if err := n.probeRaft(req.RaftAddr); err != nil {
		var stale *transport.StaleError
		if errors.As(err, &stale) {
			// A machine of a majority lost for good, come back with its
			// data after the recovery: never a voter here (the probe has
			// told it to stop, as it is the end the fence finds stale).
			n.log.Error("join refused by the lineage fence", "id", req.ID, "raft_addr", req.RaftAddr, "err", stale.Error())
			return restarea.Errorf(restarea.CodeConflict, "join refused: %s", stale.Error())
		}
		// A voter the leader cannot reach would still count in the quorum:
		// with a certificate from another CA, one that does not name its
		// advertised host, or a wrong advertise address, a 3-node cluster
		// would become 4 voters surviving no further failure. The joiner
		// keeps retrying and logs this reason.
		n.log.Warn("join refused: no raft connection to the joiner", "id", req.ID, "raft_addr", req.RaftAddr, "err", err)
		return unavailable("the leader cannot open a raft connection to %s at %s (check its --raft-advertise, its certificate's hosts and CA, and the cluster secret): %v", req.ID, req.RaftAddr, err)
	}
	if err := cluster.AddVoter(n.raft, req.ID, req.RaftAddr, n.cfg.ApplyTimeout); err != nil {
		if errors.Is(err, raft.ErrNotLeader) {
			return cluster.ErrNotLeader
		}
		return unavailable("adding %s failed: %v", req.ID, err)
	}
	n.log.Info("member joined or updated", "id", req.ID, "raft_addr", req.RaftAddr, "url", req.URL)
	return n.recordMember(ctx, req.ID, req.URL)
}

// joinProbeTimeout bounds the leader's test connection to a joiner: TCP,
// TLS and the secret's proof both ways, well inside a join's 15 s.
const joinProbeTimeout = 5 * time.Second

// probeRaft opens and closes one raft connection to addr, through the
// same TLS and cluster-secret handshake raft's own connections take, so a
// member is admitted only if the leader can actually replicate to it.
func (n *Node) probeRaft(addr string) error {
	conn, err := n.mux.RaftLayer().Dial(raft.ServerAddress(addr), joinProbeTimeout)
	if err != nil {
		return err
	}
	return conn.Close()
}

func (n *Node) recordMember(ctx context.Context, id, url string) error {
	if members, err := n.fsm.Members(); err == nil && members[id].URL == url {
		return nil
	}
	_, err := n.propose(ctx, &fsm.Command{Op: fsm.OpMember, Member: &fsm.MemberCommand{MemberInfo: fsm.MemberInfo{ID: id, URL: url}}})
	return err
}

// RemoveLeader removes a server from the configuration.
func (n *Node) RemoveLeader(ctx context.Context, id string) error {
	if !n.IsLeader() {
		return cluster.ErrNotLeader
	}
	if !n.isMember(id) {
		return restarea.Errorf(restarea.CodeNotFound, "no member has id %q", id)
	}
	if id == n.id {
		// The leader cannot usefully remove itself in one step: hand over
		// first, then the new leader removes it.
		if err := n.waitFuture(ctx, n.raft.LeadershipTransfer(), transferWait); err != nil {
			return unavailable("leadership transfer before removing the leader failed: %v", err)
		}
		return cluster.ErrNotLeader
	}
	if err := n.waitFuture(ctx, n.raft.RemoveServer(raft.ServerID(id), 0, n.cfg.ApplyTimeout), n.cfg.ApplyTimeout); err != nil {
		return unavailable("removing %s failed: %v", id, err)
	}
	n.log.Info("member removed", "id", id)
	res, err := n.propose(ctx, n.withOrigin(ctx, &fsm.Command{Op: fsm.OpMember, Member: &fsm.MemberCommand{MemberInfo: fsm.MemberInfo{ID: id}, Remove: true}}))
	if err != nil {
		return err
	}
	n.logAction(ctx, restarea.AuditMemberRemove, id, res)
	return nil
}

// member returns the raft address of server id; ok is false when id is
// not in the configuration or the configuration cannot be read (err).
func (n *Node) member(id string) (addr raft.ServerAddress, ok bool, err error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return "", false, err
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == id {
			return s.Address, true, nil
		}
	}
	return "", false, nil
}

func (n *Node) isMember(id string) bool {
	_, ok, _ := n.member(id)
	return ok
}

// TransferLeader hands leadership to id, or to the most up-to-date voter.
func (n *Node) TransferLeader(ctx context.Context, id string) error {
	if !n.IsLeader() {
		return cluster.ErrNotLeader
	}
	var f raft.Future
	if id == "" {
		if cluster.Voters(n.raft) < 2 {
			// Raft would answer "cannot find peer" after a while, which
			// reads as "retry later"; no retry can help.
			return restarea.Errorf(restarea.CodeConflict, "this node is the cluster's only voter: there is no other node to hand leadership to (add members first)")
		}
		f = n.raft.LeadershipTransfer()
	} else {
		addr, ok, err := n.member(id)
		if err != nil {
			return err
		}
		if !ok {
			return restarea.Errorf(restarea.CodeNotFound, "no member has id %q", id)
		}
		if id == n.id {
			return nil
		}
		f = n.raft.LeadershipTransferToServer(raft.ServerID(id), addr)
	}
	if err := n.waitFuture(ctx, f, transferWait); err != nil {
		return unavailable("leadership transfer failed: %v", err)
	}
	return nil
}

// transferWait bounds how long a request waits for a leadership transfer:
// raft gives up on one after an election timeout, but a request must not
// hang on a future whose answer comes late or never (a node paused or
// shutting down meanwhile).
const transferWait = 10 * time.Second

// Join routes a join request to the leader.
func (n *Node) Join(ctx context.Context, req cluster.JoinRequest) error {
	return n.onLeader(ctx, func(ctx context.Context) error { return n.JoinLeader(ctx, req) },
		func(ctx context.Context, addr string) error { return n.peers.JoinLeader(ctx, addr, req) })
}

// onLeader runs local on the leader, or remote against the leader, waiting
// a bounded time for one and retrying while leadership moves.
func (n *Node) onLeader(ctx context.Context, local func(context.Context) error, remote func(context.Context, string) error) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.LeaderWait+n.cfg.ApplyTimeout)
	defer cancel()
	for {
		if err := n.WaitLeader(ctx); err != nil {
			return err
		}
		var err error
		if n.IsLeader() {
			err = local(ctx)
		} else if addr, aerr := n.leaderAddr(); aerr == nil {
			err = remote(ctx, addr)
		} else {
			err = cluster.ErrNotApplied
		}
		if !errors.Is(err, cluster.ErrNotLeader) && !errors.Is(err, cluster.ErrNotApplied) {
			return err
		}
		select {
		case <-ctx.Done():
			return unavailable("the leader changed repeatedly; retry")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Peer describes this node for formation.
func (n *Node) Peer() cluster.PeerInfo {
	_, id := n.raft.LeaderWithID()
	return cluster.PeerInfo{ID: n.id, RaftAddr: n.RaftAddr(), URL: n.AdvertiseURL(), HasState: n.hasState.Load(), LeaderID: string(id),
		LogFormat: fsm.LogFormatMax, Clock: n.clock.report(),
		Version: n.cfg.Version, ClusterVersionMax: n.cfg.ClusterVersionMax}
}

// ClusterStatus describes the cluster as this node sees it.
func (n *Node) ClusterStatus(ctx context.Context) (restarea.ClusterStatus, error) {
	urls, err := n.fsm.Members()
	if err != nil {
		return restarea.ClusterStatus{}, err
	}
	members, err := cluster.Members(n.raft, urls)
	if err != nil {
		return restarea.ClusterStatus{}, unavailable("raft configuration unavailable: %v", err)
	}
	n.memberVersions(ctx, members)
	_, leader := n.raft.LeaderWithID()
	return restarea.ClusterStatus{
		NodeID:       n.id,
		Version:      n.cfg.Version,
		Commit:       n.cfg.Commit,
		State:        strings.ToLower(n.raft.State().String()),
		LeaderID:     string(leader),
		LeaderURL:    urls[string(leader)].URL,
		Term:         n.raft.CurrentTerm(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.raft.AppliedIndex(),
		LogFormat:    n.fsm.LogFormat(),
		// The cluster version as this node applied it, and the newest
		// this binary knows.
		ClusterVersion:    n.fsm.ClusterVersion(),
		ClusterVersionMax: n.cfg.ClusterVersionMax,
		Lineage:           n.Lineage(),
		Members:           members,
		Clock:             n.clockStatus(),
	}, nil
}

// Version is the build this node reports (Config.Version): in its MCP
// handshake and its cluster status.
func (n *Node) Version() string { return n.cfg.Version }

// RemoveMember removes a server, through the leader.
func (n *Node) RemoveMember(ctx context.Context, id string) error {
	if id == "" {
		return restarea.Errorf(restarea.CodeInvalidRequest, "id is required")
	}
	ctx = n.originContext(ctx)
	return n.onLeader(ctx, func(ctx context.Context) error { return n.RemoveLeader(ctx, id) },
		func(ctx context.Context, addr string) error { return n.peers.RemoveLeader(ctx, addr, id) })
}

// TransferLeadership hands leadership over, through the leader, and
// records the transfer in the audit trail.
func (n *Node) TransferLeadership(ctx context.Context, id string) error {
	ctx = n.originContext(ctx)
	_, from := n.raft.LeaderWithID()
	err := n.onLeader(ctx, func(ctx context.Context) error { return n.TransferLeader(ctx, id) },
		func(ctx context.Context, addr string) error { return n.peers.TransferLeader(ctx, addr, id) })
	if err != nil {
		return err
	}
	n.recordTransfer(ctx, string(from), id)
	return nil
}

// WriteBackup streams a consistent copy of the state file to w: a backup
// that RestoreBackup (and `restarea restore`) accepts.
func (n *Node) WriteBackup(ctx context.Context, w io.Writer) (int64, error) { return n.fsm.WriteTo(w) }

// handOverLeadership transfers leadership before a graceful stop, so the
// cluster does not wait an election timeout to notice the leader is gone.
func (n *Node) handOverLeadership() {
	if n.raft == nil || !n.IsLeader() || cluster.Voters(n.raft) < 2 {
		return
	}
	done := make(chan error, 1)
	go func() { done <- n.raft.LeadershipTransfer().Error() }()
	select {
	case err := <-done:
		if err != nil {
			n.log.Warn("leadership hand-over failed", "err", err)
		} else {
			to := n.successor(n.cfg.ElectionTimeout)
			n.log.Info("handed leadership over before stopping", "node_id", n.id, "new_leader", to, "term", n.raft.CurrentTerm())
		}
	case <-time.After(5 * time.Second):
		n.log.Warn("leadership hand-over timed out")
	}
}

// successor waits up to wait for the leader that took over to make
// itself known (its first append, a heartbeat away), so the hand-over's
// log line names it and the writes this node still forwards find it;
// "" when it is not known by then.
func (n *Node) successor(wait time.Duration) string {
	deadline := time.Now().Add(wait)
	for {
		if _, id := n.raft.LeaderWithID(); id != "" && string(id) != n.id {
			return string(id)
		}
		if time.Now().After(deadline) {
			return ""
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// announceSelf records this node's URL (and, after an address change, its
// raft address) when it becomes leader.
func (n *Node) announceSelf(ctx context.Context) {
	// A node missing from the configuration is not re-added here: it was
	// removed, or joins by itself.
	if addr, ok, err := n.member(n.id); err == nil && ok && string(addr) != n.RaftAddr() {
		if err := cluster.AddVoter(n.raft, n.id, n.RaftAddr(), n.cfg.ApplyTimeout); err != nil {
			n.log.Log(context.Background(), n.faultLevel(), "could not update own raft address", "err", err)
		}
	}
	if err := n.recordMember(ctx, n.id, n.AdvertiseURL()); err != nil {
		n.log.Log(ctx, n.faultLevel(), "could not record own URL", "err", err)
	}
}

func (n *Node) String() string { return fmt.Sprintf("node %s", n.id) }
