// Package node is the Raft core of a rest.area node: it opens the state
// file and the raft log, starts hashicorp/raft, and implements the service
// interfaces that the REST, MCP and page adapters call (restarea.Service,
// AdminService, ClusterService, SearchService), proposing every write
// through the log and answering reads from the applied state. It serves
// no HTTP itself: internal/server binds the public port, assembles the
// adapters around a Node and stops with it (OnShutdown).
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/bbolt"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/cluster"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/diskwatch"
	"github.com/restarea/restarea/internal/raftlog"
	"github.com/restarea/restarea/internal/search"
	"github.com/restarea/restarea/transport"
)

// Node is one running member of a rest.area cluster. It implements
// restarea.Service and restarea.AdminService.
type Node struct {
	cfg  Config
	log  *slog.Logger
	id   string
	fsm  *fsm.FSM
	logs *raftboltdb.BoltStore
	raft *raft.Raft
	tr   *raft.NetworkTransport
	mux  *transport.Mux

	// search is this node's own full-text index of its state.
	search *search.Index
	// searchGate admits searches (rate, share per source, slots).
	searchGate *search.Gate
	// hasState is true once the node belongs to a cluster (set by the
	// formation goroutine, read by peers' requests).
	hasState atomic.Bool
	// readyTerm is the term in which this node, as leader, has applied
	// everything committed before it (confirmApplied).
	readyTerm atomic.Uint64
	format    formatGate
	peers     *cluster.Client
	guard     *cluster.Guard // checks signed requests on both ports
	intSrv    *http.Server
	reg       *prometheus.Registry
	met       *metrics
	disk      *diskwatch.Watch // failed writes to the data directory (diskfull.go)
	// diskHandovers counts leadership transfers this node made because it
	// could not write its data directory.
	diskHandovers prometheus.Counter
	// raftConfMu orders the read-modify-writes of raft's reloadable
	// config (snapshot threshold, reluctant election timeouts).
	raftConfMu sync.Mutex
	clock      *clockGuard
	pre        *preCheck // posts refused before they are proposed

	fwd forwardQueue // writes waiting to go to the leader (forward.go)
	// ack is read-your-writes for the writes this node answered.
	ack ackBarrier

	// onShutdown runs when the node stops (OnShutdown).
	shutdownMu sync.Mutex
	onShutdown []func(graceful bool)

	stop chan struct{}
	wg   sync.WaitGroup
	// backfillKick wakes the leader loop to index older entries by their
	// body (backfill.go).
	backfillKick chan struct{}
	closeOnce    sync.Once
	closeErr     error

	// versions is what the other members said about their releases
	// (clusterversion.go).
	versions peerVersions
	// haltErr is why the node stopped by itself (Halted).
	haltErr atomic.Pointer[error]
	// lin is the lineage the node shows in its handshakes (lineage.go).
	lin lineageState
	// started is closed when Start returns; startOK (written before) says
	// whether it returned the node.
	started chan struct{}
	startOK bool
	// done is closed once the node has stopped and closed its stores.
	done chan struct{}
}

var (
	_ restarea.Service      = (*Node)(nil)
	_ restarea.AdminService = (*Node)(nil)
)

// Start opens the data directory and starts raft (bootstrapping a cluster
// of one on first start, or joining cfg.JoinURLs). cfg.HTTPAddr must be the
// address the node's public port is already bound to (internal/server binds
// it first), so that the node's URL is right before formation or a peer
// asks for it. Close stops the node.
func Start(cfg Config) (*Node, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: cfg.Logger, stop: make(chan struct{}), backfillKick: make(chan struct{}, 1), reg: prometheus.NewRegistry(), started: make(chan struct{}), done: make(chan struct{})}
	// A state machine that stops while Start runs (raft replays the log
	// as soon as it starts) stops the node only once Start is done with it.
	defer close(n.started)
	if err := n.open(); err != nil {
		n.closeStores(true)
		return nil, err
	}
	n.startCluster()
	n.wg.Add(4)
	go n.leaderLoop()
	go n.clockLoop()
	go n.tuneSnapshots(5 * time.Second)
	go n.watchDisk(100 * time.Millisecond)
	if n.cfg.ScrubRate > 0 {
		n.wg.Add(1)
		go n.scrub()
	}
	n.log.Info("node started", "node_id", n.id, "http", n.HTTPAddr(), "raft", string(n.tr.LocalAddr()), "data_dir", cfg.DataDir)
	n.startOK = true
	return n, nil
}

func (n *Node) open() error {
	cfg := n.cfg
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	// Before anything opens a file of the data directory for writing.
	if err := n.checkClusterVersion(); err != nil {
		return err
	}
	if err := checkStale(cfg.DataDir); err != nil {
		return err
	}
	id, err := nodeID(cfg.DataDir, cfg.NodeID)
	if err != nil {
		return err
	}
	n.id = id
	n.met = newMetrics(n.reg)
	registerBuildInfo(n.reg, cfg.Version, cfg.Commit)
	n.pre = newPreCheck(n.reg)
	n.openDiskWatch()

	n.fsm, err = fsm.Open(filepath.Join(cfg.DataDir, "state.db"), fsm.Options{
		Logger:       n.log,
		Observe:      n.met.observeBatch,
		Fault:        cfg.FSMFault,
		Unsynced:     !cfg.SyncState,
		CommitEvery:  max(cfg.StateCommitInterval, 0),
		BootID:       cfg.BootID,
		Stop:         n.stop,
		BeforeCommit: cfg.DiskHooks.beforeCommit(),
		// The state machine applies what this node announces it knows.
		ClusterVersionMax: cfg.ClusterVersionMax,
		OnHalt:            n.onHalt,
	})
	if err != nil {
		return err
	}
	mono := cfg.Monotonic
	if mono == nil {
		mono = processMonotonic()
	}
	n.clock = newClockGuard(cfg.Now, mono, cfg.ClockTolerance, n.fsm.Clock())
	if err := n.openSearch(); err != nil {
		return err
	}
	n.logs, err = raftboltdb.New(raftboltdb.Options{
		Path: filepath.Join(cfg.DataDir, "raft.db"),
		// The log file stays small (snapshots compact it), so rebuilding
		// the free list on open is cheap, and not writing it saves pages
		// on every append. The map free list keeps frees O(1).
		BoltOptions: &bbolt.Options{Timeout: 5 * time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType},
	})
	if err != nil {
		return fmt.Errorf("raft log: %w", err)
	}
	if err := n.adoptLineage(); err != nil {
		return err
	}
	hl := n.raftLog()
	// Snapshots with their meta.json checked (snapsum.go): a damaged one
	// stops the node.
	snaps, err := openSnapshots(cfg.DataDir, hl, n.snapshotDamaged)
	if err != nil {
		return fmt.Errorf("snapshot store: %w", err)
	}
	if err := syncDataDir(cfg.DataDir, n.log); err != nil {
		return err
	}
	adv := cfg.RaftAdvertise
	if adv == "" {
		adv = defaultAdvertise(cfg.RaftAddr)
	}
	n.mux, err = transport.Listen(transport.Config{
		BindAddr: cfg.RaftAddr, AdvertiseAddr: adv, TLS: cfg.TLS, Secret: cfg.ClusterSecret, Logger: n.log, Faults: cfg.Faults,
		Versions: cfg.ProtocolVersions, Identity: n.identity, OnStale: n.onStale,
	})
	if err != nil {
		return fmt.Errorf("raft listen %s: %w", cfg.RaftAddr, err)
	}
	n.tr = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: n.mux.RaftLayer(), MaxPool: 8, Timeout: 10 * time.Second, Logger: hl,
	})

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(id)
	rc.Logger = hl
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = cfg.TrailingLogs
	// Raft's metrics name each peer in a label; the legacy copies put the
	// peer id in the metric name, which /metrics cannot carry.
	rc.NoLegacyTelemetry = true
	// Followers learn the commit index from the leader's next append; a
	// short commit timeout bounds how long a follower that forwarded a
	// write waits to apply it (read-your-writes) when traffic is light.
	rc.CommitTimeout = 5 * time.Millisecond
	// The state file records its applied index in the same transaction as
	// the changes, and the FSM skips entries at or below it, so restoring
	// the last snapshot on start would only redo work — unless the file is
	// behind that snapshot. Raft resumes applying after the snapshot's
	// index whether or not it restores it, so a file behind it (torn by a
	// machine crash and started over empty, or left behind by a snapshot
	// install the process did not live to finish) would silently miss the
	// entries in between.
	behind, err := stateBehindSnapshot(n.fsm, snaps)
	if err != nil {
		return err
	}
	rc.NoSnapshotRestoreOnStart = !n.fsm.Rebuilt() && !behind
	// Let the leader gather concurrent proposals into one log append.
	rc.BatchApplyCh = true

	// Raft's writes to the log are watched (a failure marks the node
	// unable to take writes, diskfull.go); the log cache goes on top, so
	// that it only ever holds what the store accepted.
	// Every entry read from raft.db is checked against its checksum
	// (logcheck.go), under everything else.
	logs := n.disk.LogStore(cfg.DiskHooks.wrapLogStore(checkedLogs{n.logs, n.logDamaged}))
	if cached, err := raft.NewLogCache(1024, logs); err == nil {
		logs = cached
	}
	stable := n.disk.StableStore(n.logs, n.log, n.stop)
	// Raft drives the state machine, then the search index, then the
	// read barriers, for every committed batch (raftfsm.go).
	machine := raftFSM{FSM: n.fsm, index: n.search, applied: n.ack.notifyApplied, restored: n.restoredLineage}
	n.raft, err = raft.NewRaft(rc, machine, logs, stable, countSnapshots(snaps, n.met.snapshots), raftTransport{n.tr, n.logDamaged})
	if err := snaps.damaged(); err != nil {
		// Raft restoring on start falls back on an older snapshot when
		// the newest does not open: a damaged one must not be skipped
		// silently (node/DESIGN.md, "Damaged snapshots").
		if n.raft != nil {
			n.raft.Shutdown().Error()
			n.raft = nil
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("raft: %w", err)
	}
	has, err := raft.HasExistingState(n.logs, n.logs, snaps)
	if err != nil {
		return fmt.Errorf("raft state: %w", err)
	}
	n.hasState.Store(has)
	if !has && len(cfg.JoinURLs) == 0 {
		if err := n.bootstrap([]raft.Server{{Suffrage: raft.Voter, ID: rc.LocalID, Address: n.tr.LocalAddr()}}); err != nil {
			return err
		}
	}
	n.guard = cluster.NewGuard(cfg.ClusterSecret, n.log)
	n.met.watchRaft(n)
	n.met.watchCluster(n.mux, n.guard)
	return nil
}

// raftLog returns the logger raft writes through: the node's logger, or
// JSON lines of the same shape on Config.RaftLogOutput when it is set.
func (n *Node) raftLog() hclog.Logger {
	sl := n.log
	if out := n.cfg.RaftLogOutput; out != nil {
		sl = slog.New(slog.NewJSONHandler(out, nil))
	}
	return raftlog.New(sl, "raft")
}

// stateBehindSnapshot reports whether the newest snapshot raft holds is
// past what the state file has applied.
func stateBehindSnapshot(f *fsm.FSM, snaps raft.SnapshotStore) (bool, error) {
	metas, err := snaps.List()
	if err != nil {
		return false, fmt.Errorf("snapshot store: %w", err)
	}
	return len(metas) > 0 && metas[0].Index > f.AppliedIndex(), nil
}

// bootstrap starts a new cluster with servers, once.
func (n *Node) bootstrap(servers []raft.Server) error {
	f := n.raft.BootstrapCluster(raft.Configuration{Servers: servers})
	if err := f.Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("bootstrap: %w", err)
	}
	n.hasState.Store(true)
	n.log.Info("bootstrapped a new cluster", "node_id", n.id, "servers", len(servers))
	return nil
}

// nodeID returns the configured id, or the one kept in dir, or a new one
// written there.
func nodeID(dir, configured string) (string, error) {
	path := filepath.Join(dir, "node-id")
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		stored := strings.TrimSpace(string(b))
		if configured != "" && configured != stored {
			return "", fmt.Errorf("node id %q differs from %q stored in %s; a data directory belongs to one node", configured, stored, path)
		}
		return stored, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", err
	}
	id := configured
	if id == "" {
		id = "node-" + uuid.NewString()[:8]
	}
	if err := writeSynced(path, []byte(id+"\n"), 0o640); err != nil {
		return "", fmt.Errorf("write node id: %w", err)
	}
	return id, nil
}

// ID returns the node's id.
func (n *Node) ID() string { return n.id }

// HTTPAddr returns the address of the node's public HTTP port.
func (n *Node) HTTPAddr() string { return n.cfg.HTTPAddr }

// RaftAddr returns the raft address other nodes dial.
func (n *Node) RaftAddr() string { return string(n.tr.LocalAddr()) }

// URL returns the base URL of this node's HTTP server: https:// when its
// public port serves HTTPS (Config.HTTPS), http:// otherwise.
func (n *Node) URL() string {
	if n.cfg.HTTPS {
		return "https://" + n.HTTPAddr()
	}
	return "http://" + n.HTTPAddr()
}

// AdvertiseURL is this node's own base URL as others reach it.
func (n *Node) AdvertiseURL() string {
	if n.cfg.AdvertiseURL != "" {
		return strings.TrimRight(n.cfg.AdvertiseURL, "/")
	}
	return n.URL()
}

// PublicURL is the base of entry urls, the same on every node.
func (n *Node) PublicURL() string {
	if n.cfg.PublicURL != "" {
		return strings.TrimRight(n.cfg.PublicURL, "/")
	}
	return n.URL()
}

// Registry returns the node's Prometheus registry (served at /metrics).
func (n *Node) Registry() *prometheus.Registry { return n.reg }

// WaitLeader blocks until the cluster has a leader or ctx ends.
func (n *Node) WaitLeader(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if addr, _ := n.raft.LeaderWithID(); addr != "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return restarea.Errorf(restarea.CodeUnavailable, "no leader elected yet").WithRetryAfter(time.Second)
		case <-n.stop:
			return restarea.Errorf(restarea.CodeUnavailable, "node is shutting down").WithRetryAfter(time.Second)
		case <-t.C:
		}
	}
}

// IsLeader reports whether this node is the raft leader.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Ready reports whether the node can serve: it knows a leader and has
// applied everything it knows to be committed.
func (n *Node) Ready() error {
	select {
	case <-n.stop:
		return errors.New("shutting down")
	default:
	}
	if err := n.diskTrouble(); err != nil {
		return err // before "no leader": the full disk is what the operator must fix
	}
	if addr, _ := n.raft.LeaderWithID(); addr == "" {
		return errors.New("no leader")
	}
	if n.IsLeader() && n.readyTerm.Load() != n.raft.CurrentTerm() {
		return errors.New("catching up: the new leader has not applied the log before its term yet")
	}
	if c := n.raft.CommitIndex(); !n.caughtUp(c) {
		return fmt.Errorf("catching up: applied %d of %d", n.fsm.AppliedIndex(), c)
	}
	return nil
}

// ReadyForReads reports whether the node answers reads from its own
// state: it runs and its state file can be read. It asks nothing of the
// cluster, so a node cut off from its quorum stays ready for reads (a
// stale read answers at once; a default read too once the node has been
// in touch with a leader since it started) while Ready says it takes no
// writes.
func (n *Node) ReadyForReads() error {
	select {
	case <-n.stop:
		return errors.New("shutting down")
	default:
	}
	if _, err := n.fsm.Count(); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	return nil
}

// OnShutdown registers f to run when the node stops, after it has handed
// leadership over and refused new work, and before raft shuts down and the
// stores close: the public port stops there, so that requests in flight
// end while the node can still answer them. graceful is false for Kill.
func (n *Node) OnShutdown(f func(graceful bool)) {
	n.shutdownMu.Lock()
	defer n.shutdownMu.Unlock()
	n.onShutdown = append(n.onShutdown, f)
}

// Close stops serving, shuts raft down and closes the stores. It is safe
// to call more than once.
func (n *Node) Close() error { return n.shutdown(true) }

// Kill stops the node at once, the way a crash would look to its peers:
// no leadership hand-over, requests in flight are cut off. What was
// committed is on disk either way.
func (n *Node) Kill() error { return n.shutdown(false) }

// faultLevel is the level of a failed write or leader task: WARN, or
// DEBUG once Close or Kill has begun, when raft refusing work is the
// node's own shutdown and no fault.
func (n *Node) faultLevel() slog.Level {
	select {
	case <-n.stop:
		return slog.LevelDebug
	default:
		return slog.LevelWarn
	}
}

func (n *Node) shutdown(graceful bool) error {
	n.closeOnce.Do(func() {
		if graceful {
			n.handOverLeadership()
		}
		close(n.stop)
		n.shutdownMu.Lock()
		hooks := n.onShutdown
		n.shutdownMu.Unlock()
		for _, f := range hooks {
			f(graceful)
		}
		n.wg.Wait()
		if n.raft != nil {
			if err := n.raft.Shutdown().Error(); err != nil {
				n.closeErr = err
			}
		}
		n.closeStores(graceful)
		n.log.Info("node stopped", "node_id", n.id)
		close(n.done)
	})
	return n.closeErr
}

// closeStores closes what open opened. An ungraceful stop leaves the state
// file as a crashed process would: unsynced, its boot marker unchanged.
func (n *Node) closeStores(graceful bool) {
	if n.intSrv != nil {
		n.intSrv.Close()
	}
	if n.tr != nil {
		n.tr.Close()
	}
	if n.mux != nil {
		n.mux.Close()
	}
	if n.logs != nil {
		n.logs.Close()
	}
	if n.search != nil {
		if err := n.search.Close(); err != nil {
			n.log.Warn("closing the search index", "err", err)
		}
	}
	if n.fsm != nil {
		if graceful {
			n.fsm.Close()
		} else {
			n.fsm.Abandon()
		}
	}
}

// DataDir returns the node's data directory.
func (n *Node) DataDir() string { return n.cfg.DataDir }

// defaultAdvertise picks the raft address peers dial when none is given:
// the bind address itself, unless it is unspecified (0.0.0.0, [::]), which
// nobody can dial — then this host's first non-loopback IPv4 address, as
// a container's single node needs.
func defaultAdvertise(bind string) string {
	host, port, err := net.SplitHostPort(bind)
	if err != nil || port == "0" {
		return ""
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return ""
	}
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				return net.JoinHostPort(ipn.IP.String(), port)
			}
		}
	}
	return net.JoinHostPort("127.0.0.1", port)
}
