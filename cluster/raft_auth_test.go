package cluster_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	dto "github.com/prometheus/client_model/go"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// plainRaftLayer is an outsider's raft client: hashicorp/raft's
// NetworkTransport over plain TCP, sending the raft kind byte (1) first.
// It knows the protocol, not the cluster secret.
type plainRaftLayer struct{ net.Listener }

func (l plainRaftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte{1}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func forgingTransport(t *testing.T) *raft.NetworkTransport {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: plainRaftLayer{ln}, MaxPool: 1, Timeout: 2 * time.Second,
		Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard}),
	})
	t.Cleanup(func() { tr.Close() })
	return tr
}

// metric returns the value of the metric name with the given labels in n's
// registry (0 when absent).
func metric(t *testing.T, n *node.Node, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for k, v := range labels {
				if !hasLabel(m, k, v) {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			}
		}
	}
	return 0
}

func hasLabel(m *dto.Metric, k, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == k && l.GetValue() == v {
			return true
		}
	}
	return false
}

// The attacks of issues 18 and 19 against a real three-node cluster: a
// forged vote with LeadershipTransfer at the leader, a forged heartbeat
// and a forged entry (at the follower's next index, in the current term,
// from unknown leader "evil"), a forged snapshot install and a forged
// TimeoutNow at a follower. Every one is refused before raft reads it; the
// term and leader stay, the forged entry is on no node, a later real post
// is on every node, and the refusals are counted.
func TestForgedRaftRPCsRefused(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(fastFailover))
	first := testnode.Post(t, nodes[0], testkit.Question("before the forgeries"))
	testnode.WaitThread(t, nodes, first.Entry.ID)
	leader := testnode.Leader(t, nodes)
	follower := others(nodes, leader)[0]
	ctx := context.Background()
	st, err := follower.ClusterStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	term := st.Term
	evil := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("evil"), Addr: []byte("127.0.0.1:1")}
	forgedID := uuid.NewString()
	cmd := forgedPost(testkit.Question("forged entry"))
	cmd.Post.NewID = forgedID
	cmd.Time = time.Now().UnixNano()
	data, err := cmd.Encode()
	if err != nil {
		t.Fatal(err)
	}
	tr := forgingTransport(t)
	at := func(n *node.Node) raft.ServerAddress { return raft.ServerAddress(n.RaftAddr()) }
	heartbeat := func(entries ...*raft.Log) *raft.AppendEntriesRequest {
		return &raft.AppendEntriesRequest{RPCHeader: evil, Term: term, PrevLogEntry: st.CommitIndex, PrevLogTerm: term,
			Entries: entries, LeaderCommitIndex: st.CommitIndex + uint64(len(entries))}
	}
	attacks := []struct {
		name string
		send func() error
	}{
		{"vote with leadership transfer", func() error {
			var resp raft.RequestVoteResponse
			return tr.RequestVote("x", at(leader), &raft.RequestVoteRequest{RPCHeader: evil, Term: term + 1000,
				LastLogIndex: st.CommitIndex + 1000, LastLogTerm: term + 999, LeadershipTransfer: true}, &resp)
		}},
		{"heartbeat", func() error {
			var resp raft.AppendEntriesResponse
			return tr.AppendEntries("x", at(follower), heartbeat(), &resp)
		}},
		{"entry", func() error {
			var resp raft.AppendEntriesResponse
			return tr.AppendEntries("x", at(follower), heartbeat(&raft.Log{Index: st.CommitIndex + 1, Term: term, Type: raft.LogCommand, Data: data}), &resp)
		}},
		{"install snapshot", func() error {
			var resp raft.InstallSnapshotResponse
			return tr.InstallSnapshot("x", at(follower), &raft.InstallSnapshotRequest{RPCHeader: evil, SnapshotVersion: raft.SnapshotVersionMax,
				Term: term + 1, LastLogIndex: st.CommitIndex + 1000, LastLogTerm: term + 1, Size: 6}, &resp, bytes.NewReader([]byte("forged")))
		}},
		{"timeout now", func() error {
			var resp raft.TimeoutNowResponse
			return tr.TimeoutNow("x", at(follower), &raft.TimeoutNowRequest{RPCHeader: evil}, &resp)
		}},
	}
	for _, a := range attacks {
		if err := a.send(); err == nil {
			t.Errorf("forged %s was answered", a.name)
		}
	}

	after := testnode.Post(t, follower, testkit.Question("after the forgeries"))
	testnode.WaitThread(t, nodes, after.Entry.ID)
	for _, n := range nodes {
		s, err := n.ClusterStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.Term != term || s.LeaderID != leader.ID() {
			t.Errorf("node %s: term %d leader %s; want term %d leader %s", n.ID(), s.Term, s.LeaderID, term, leader.ID())
		}
		if _, err := n.GetThread(ctx, forgedID, restarea.ReadOptions{}); restarea.ErrorCode(err) != restarea.CodeNotFound {
			t.Errorf("node %s: forged entry: %v, want not found", n.ID(), err)
		}
	}
	var refused float64
	for _, n := range nodes {
		refused += metric(t, n, "restarea_cluster_conn_refused_total", map[string]string{"reason": "protocol"})
	}
	if refused < float64(len(attacks)) {
		t.Fatalf("%v forged connections counted, want at least %d", refused, len(attacks))
	}
	t.Logf("%d forgeries refused, %v counted; term %d and leader %s unchanged", len(attacks), refused, term, leader.ID())
}
