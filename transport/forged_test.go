package transport

import (
	"bytes"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// plainRaftLayer is what an outsider builds: hashicorp/raft's own
// NetworkTransport over plain TCP, sending the raft kind byte first. It
// knows the protocol but not the secret.
type plainRaftLayer struct{ net.Listener }

func (l plainRaftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte{kindRaft}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func forger(t *testing.T) *raft.NetworkTransport {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  plainRaftLayer{ln},
		MaxPool: 1,
		Timeout: 2 * time.Second,
		Logger:  hclog.New(&hclog.LoggerOptions{Output: testWriter(t), Level: hclog.Error}),
	})
	t.Cleanup(func() { tr.Close() })
	return tr
}

var evil = raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("evil"), Addr: []byte("127.0.0.1:1")}

func (c *raftCluster) follower() *raftNode {
	for _, nd := range c.nodes {
		if nd.r.State() == raft.Follower {
			return nd
		}
	}
	return nil
}

// forgedHeartbeat is an AppendEntries from leader "evil" in the current
// term that matches the follower's log.
func forgedHeartbeat(nd *raftNode, entries ...*raft.Log) *raft.AppendEntriesRequest {
	lastTerm, _ := strconv.ParseUint(nd.r.Stats()["last_log_term"], 10, 64)
	return &raft.AppendEntriesRequest{
		RPCHeader: evil, Term: nd.r.CurrentTerm(), PrevLogEntry: nd.r.LastIndex(), PrevLogTerm: lastTerm,
		Entries: entries, LeaderCommitIndex: nd.r.CommitIndex(),
	}
}

// Without a secret (a single node on loopback is the only place that is
// allowed now) a forged AppendEntries is obeyed: the attack the handshake
// stops is real, and the forging client below works.
func TestForgedRaftRPCObeyedWithoutSecret(t *testing.T) {
	c := startCluster(t, nil)
	c.replicate(t, []byte("before"))
	f := c.follower()
	var resp raft.AppendEntriesResponse
	if err := forger(t).AppendEntries("x", raft.ServerAddress(f.mux.Addr().String()), forgedHeartbeat(f), &resp); err != nil {
		t.Fatalf("forged heartbeat without a secret: %v", err)
	}
	if !resp.Success {
		t.Fatalf("forged heartbeat without a secret not obeyed: %+v", resp)
	}
}

// With a secret, vote, append (heartbeat and entry), install-snapshot and
// timeout-now from a client without it are all refused before raft reads
// them: the leader and term stay, the forged entry is applied nowhere, a
// later real entry everywhere, and the refusals are counted.
func TestForgedRaftRPCRefusedWithSecret(t *testing.T) {
	c := startClusterSecret(t, clusterSecret, nil)
	c.replicate(t, []byte("before"))
	leader := c.leader(t)
	f := c.follower()
	term := leader.r.CurrentTerm()
	tr := forger(t)
	to := func(nd *raftNode) raft.ServerAddress { return raft.ServerAddress(nd.mux.Addr().String()) }

	var vr raft.RequestVoteResponse
	vote := &raft.RequestVoteRequest{RPCHeader: evil, Term: term + 1000, LastLogIndex: 1 << 40, LastLogTerm: term + 999, LeadershipTransfer: true}
	if err := tr.RequestVote("x", to(leader), vote, &vr); err == nil {
		t.Fatalf("forged RequestVote answered: %+v", vr)
	}
	var ar raft.AppendEntriesResponse
	if err := tr.AppendEntries("x", to(f), forgedHeartbeat(f), &ar); err == nil {
		t.Fatalf("forged heartbeat answered: %+v", ar)
	}
	entry := &raft.Log{Index: f.r.LastIndex() + 1, Term: f.r.CurrentTerm(), Type: raft.LogCommand, Data: []byte("forged")}
	if err := tr.AppendEntries("x", to(f), forgedHeartbeat(f, entry), &ar); err == nil {
		t.Fatalf("forged entry answered: %+v", ar)
	}
	var sr raft.InstallSnapshotResponse
	snap := &raft.InstallSnapshotRequest{RPCHeader: evil, SnapshotVersion: raft.SnapshotVersionMax, Term: term + 1, LastLogIndex: 1 << 30, LastLogTerm: term + 1, Size: 6}
	if err := tr.InstallSnapshot("x", to(f), snap, &sr, bytes.NewReader([]byte("forged"))); err == nil {
		t.Fatalf("forged InstallSnapshot answered: %+v", sr)
	}
	var tr2 raft.TimeoutNowResponse
	if err := tr.TimeoutNow("x", to(f), &raft.TimeoutNowRequest{RPCHeader: evil}, &tr2); err == nil {
		t.Fatalf("forged TimeoutNow answered: %+v", tr2)
	}

	c.replicate(t, []byte("after"))
	if now := c.leader(t); now != leader || leader.r.CurrentTerm() != term {
		t.Fatalf("leader or term moved: term %d → %d", term, leader.r.CurrentTerm())
	}
	for i, nd := range c.nodes {
		nd.fsm.mu.Lock()
		for _, d := range nd.fsm.applied {
			if string(d) == "forged" {
				t.Errorf("node %d applied the forged entry", i)
			}
		}
		nd.fsm.mu.Unlock()
	}
	var refused uint64
	for _, nd := range c.nodes {
		refused += nd.mux.Stats().Refused[RefusedProtocol]
	}
	if refused < 5 {
		t.Fatalf("%d forged connections counted, want at least 5", refused)
	}
}
