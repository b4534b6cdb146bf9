package transport

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// recordFSM keeps every applied command and announces each on a channel.
type recordFSM struct {
	mu      sync.Mutex
	applied [][]byte
	ch      chan []byte
}

func newRecordFSM() *recordFSM { return &recordFSM{ch: make(chan []byte, 64)} }

func (f *recordFSM) Apply(l *raft.Log) any {
	data := bytes.Clone(l.Data)
	f.mu.Lock()
	f.applied = append(f.applied, data)
	f.mu.Unlock()
	select {
	case f.ch <- data:
	default: // the slice still records it; only the notification is lost
	}
	return nil
}

func (f *recordFSM) Snapshot() (raft.FSMSnapshot, error) { return emptySnapshot{}, nil }

func (f *recordFSM) Restore(rc io.ReadCloser) error { return rc.Close() }

type emptySnapshot struct{}

func (emptySnapshot) Persist(sink raft.SnapshotSink) error { return sink.Close() }
func (emptySnapshot) Release()                             {}

type raftNode struct {
	mux *Mux
	r   *raft.Raft
	fsm *recordFSM
}

type raftCluster struct {
	nodes  []*raftNode
	notify chan bool // shared NotifyCh: a true means some node became leader
}

// startCluster runs three raft nodes over three Muxes, all bootstrapped
// with the same three-server configuration.
func startCluster(t *testing.T, tlsFor func(i int) *tls.Config) *raftCluster {
	t.Helper()
	return startClusterSecret(t, nil, tlsFor)
}

// startClusterSecret is startCluster with a cluster secret on every Mux.
func startClusterSecret(t *testing.T, secret []byte, tlsFor func(i int) *tls.Config) *raftCluster {
	t.Helper()
	const n = 3
	c := &raftCluster{notify: make(chan bool, 64)}
	var servers []raft.Server
	for i := range n {
		var cfg *tls.Config
		if tlsFor != nil {
			cfg = tlsFor(i)
		}
		m := listenAuth(t, secret, cfg, 2*time.Second, 0)
		c.nodes = append(c.nodes, &raftNode{mux: m, fsm: newRecordFSM()})
		servers = append(servers, raft.Server{
			ID:      raft.ServerID(fmt.Sprintf("n%d", i)),
			Address: raft.ServerAddress(m.Addr().String()),
		})
	}
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Output: testWriter(t), Level: hclog.Warn})
	for i, nd := range c.nodes {
		conf := raft.DefaultConfig()
		conf.LocalID = servers[i].ID
		conf.HeartbeatTimeout = 300 * time.Millisecond
		conf.ElectionTimeout = 300 * time.Millisecond
		conf.LeaderLeaseTimeout = 150 * time.Millisecond
		conf.CommitTimeout = 10 * time.Millisecond
		conf.NotifyCh = c.notify
		conf.Logger = hlog.Named(string(conf.LocalID))
		trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream:  nd.mux.RaftLayer(),
			MaxPool: 3,
			Timeout: 2 * time.Second,
			Logger:  conf.Logger.Named("net"),
		})
		if trans.LocalAddr() != servers[i].Address {
			t.Fatalf("transport address %s, want advertised %s", trans.LocalAddr(), servers[i].Address)
		}
		store := raft.NewInmemStore()
		r, err := raft.NewRaft(conf, nd.fsm, store, store, raft.NewInmemSnapshotStore(), trans)
		if err != nil {
			t.Fatalf("NewRaft: %v", err)
		}
		nd.r = r
		// Shutdown closes the NetworkTransport, which closes the raft
		// sub-listener; the Mux itself is closed by listen's cleanup,
		// which runs after this one.
		t.Cleanup(func() {
			if err := r.Shutdown().Error(); err != nil {
				t.Errorf("raft shutdown: %v", err)
			}
		})
		if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
			t.Fatalf("bootstrap: %v", err)
		}
	}
	return c
}

// leader waits for a leadership notification and returns the node that
// holds leadership now.
func (c *raftCluster) leader(t *testing.T) *raftNode {
	t.Helper()
	for _, nd := range c.nodes {
		if nd.r.State() == raft.Leader {
			return nd
		}
	}
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case <-timeout.C:
			t.Fatal("no leader elected")
		case up := <-c.notify:
			if !up {
				continue
			}
			for _, nd := range c.nodes {
				if nd.r.State() == raft.Leader {
					return nd
				}
			}
		}
	}
}

// replicate applies data through the leader and waits until every node's
// FSM has applied it.
func (c *raftCluster) replicate(t *testing.T, data []byte) {
	t.Helper()
	var err error
	for range 5 {
		err = c.leader(t).r.Apply(data, 5*time.Second).Error()
		if err == nil {
			break
		}
		if !errors.Is(err, raft.ErrNotLeader) && !errors.Is(err, raft.ErrLeadershipLost) {
			t.Fatalf("apply: %v", err)
		}
	}
	if err != nil {
		t.Fatalf("apply after retries: %v", err)
	}
	for i, nd := range c.nodes {
		waitApplied(t, i, nd.fsm, data)
	}
}

func waitApplied(t *testing.T, i int, f *recordFSM, data []byte) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case got := <-f.ch:
			if bytes.Equal(got, data) {
				return
			}
		case <-timeout.C:
			t.Fatalf("node %d never applied %q", i, data)
		}
	}
}

func TestRaftClusterPlain(t *testing.T) {
	c := startCluster(t, nil)
	c.replicate(t, []byte("hello plain"))
	c.replicate(t, []byte("second"))
}

func TestRaftClusterMutualTLS(t *testing.T) {
	p := newPKI(t)
	c := startCluster(t, func(i int) *tls.Config { return p.nodeTLS(fmt.Sprintf("node%d", i)) })
	c.replicate(t, []byte("hello tls"))
}

func TestRaftClusterSecret(t *testing.T) {
	c := startClusterSecret(t, clusterSecret, nil)
	c.replicate(t, []byte("hello authenticated"))
}

func TestRaftClusterMutualTLSAndSecret(t *testing.T) {
	p := newPKI(t)
	c := startClusterSecret(t, clusterSecret, func(i int) *tls.Config { return p.nodeTLS(fmt.Sprintf("node%d", i)) })
	c.replicate(t, []byte("hello tls and secret"))
}
