package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/node"
	"github.com/restarea/restarea/transport"
)

// InProcessOptions describe an in-process cluster.
type InProcessOptions struct {
	// Nodes is the cluster size (at least 1).
	Nodes int
	// Dir holds the nodes' data directories (required).
	Dir string
	// FSMFault breaks every node's state machine on purpose, to show that
	// the checker catches it.
	FSMFault fsm.Fault
	// AdminToken for the admin API ("" → a fixed test token).
	AdminToken string
	// Logger receives the nodes' logs (nil → discarded).
	Logger *slog.Logger
}

// InProcess is a Target of real nodes (raft over TCP on loopback, bbolt
// files) running inside this process. Faults: Kill (a crash-like stop)
// and restart on the same data directory and addresses, and isolation
// of a node's cluster port. It cannot pause a node.
type InProcess struct {
	token  string
	cfgs   []server.Config
	faults []*transport.Faults
	urls   []string

	mu    sync.Mutex
	nodes []*node.Node // nil while killed
}

var (
	_ Target            = (*InProcess)(nil)
	_ FaultDriver       = (*InProcess)(nil)
	_ GracefulRestarter = (*InProcess)(nil)
)

// StartInProcess starts the nodes (the first bootstraps, the others
// join it) and waits, within ctx, until all are members and ready.
func StartInProcess(ctx context.Context, opts InProcessOptions) (*InProcess, error) {
	if opts.Nodes < 1 || opts.Dir == "" {
		return nil, errors.New("chaos: in-process cluster needs Nodes >= 1 and Dir")
	}
	if opts.AdminToken == "" {
		opts.AdminToken = "chaos-admin-token"
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ip := &InProcess{token: opts.AdminToken}
	for i := range opts.Nodes {
		f := &transport.Faults{}
		// Every client is one loopback address: no per-source bound on
		// expensive requests, as in a local cluster.
		cfg := server.Config{Config: node.Defaults(), AdminToken: opts.AdminToken, MaxExpensivePerSource: -1}
		cfg.DataDir = filepath.Join(opts.Dir, fmt.Sprintf("node%d", i))
		cfg.HTTPAddr, cfg.RaftAddr = "127.0.0.1:0", "127.0.0.1:0"
		cfg.NodeID = fmt.Sprintf("node%d", i)
		cfg.ClusterSecret = []byte("chaos-in-process-cluster-secret")
		cfg.Faults, cfg.FSMFault = f, opts.FSMFault
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = 200*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond
		cfg.LeaderWait, cfg.ApplyTimeout = 2*time.Second, 3*time.Second
		cfg.RatePerSource, cfg.RateGlobal = generous.PerSourceLimit, generous.GlobalLimit
		cfg.ExpireInterval = time.Hour
		cfg.Logger, cfg.RaftLogOutput = logger.With("node", i), io.Discard
		if i > 0 {
			cfg.JoinURLs = []string{ip.urls[0]}
		}
		n, err := server.Start(cfg)
		if err != nil {
			ip.Close()
			return nil, fmt.Errorf("chaos: start node %d: %w", i, err)
		}
		// A restart must come back on the same addresses: the raft
		// configuration names them.
		cfg.HTTPAddr, cfg.RaftAddr = n.HTTPAddr(), n.RaftAddr()
		ip.cfgs = append(ip.cfgs, cfg)
		ip.faults = append(ip.faults, f)
		ip.urls = append(ip.urls, n.URL())
		ip.nodes = append(ip.nodes, n)
	}
	if err := ip.waitMembers(ctx); err != nil {
		ip.Close()
		return nil, err
	}
	return ip, nil
}

func (ip *InProcess) waitMembers(ctx context.Context) error {
	for range maxPolls {
		ok := true
		for _, n := range ip.running() {
			st, err := n.ClusterStatus(ctx)
			if err != nil || len(st.Members) != len(ip.urls) || n.Ready() != nil {
				ok = false
			}
		}
		if ok {
			return nil
		}
		if !sleep(ctx, 20*time.Millisecond) {
			break
		}
	}
	return fmt.Errorf("chaos: in-process cluster not formed: %w", ctx.Err())
}

func (ip *InProcess) running() []*node.Node {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	var out []*node.Node
	for _, n := range ip.nodes {
		if n != nil {
			out = append(out, n)
		}
	}
	return out
}

// Name implements Target.
func (ip *InProcess) Name() string { return fmt.Sprintf("in-process %d nodes", len(ip.urls)) }

// URLs implements Target.
func (ip *InProcess) URLs() []string { return ip.urls }

// AdminToken implements Target.
func (ip *InProcess) AdminToken() string { return ip.token }

// Faults implements Target.
func (ip *InProcess) Faults() FaultDriver { return ip }

// Kinds implements FaultDriver: kill and partition.
func (ip *InProcess) Kinds() []string { return []string{ClassKill, ClassPartition} }

// Kill implements FaultDriver with node.Kill.
func (ip *InProcess) Kill(_ context.Context, i int) error {
	ip.mu.Lock()
	n := ip.nodes[i]
	ip.nodes[i] = nil
	ip.mu.Unlock()
	if n == nil {
		return nil
	}
	return n.Kill()
}

// Restart implements FaultDriver: a start on the same configuration.
// The ports were just released, so a bind error is retried briefly.
func (ip *InProcess) Restart(ctx context.Context, i int) error {
	ip.mu.Lock()
	running := ip.nodes[i] != nil
	ip.mu.Unlock()
	if running {
		return nil
	}
	cfg := ip.cfgs[i]
	cfg.JoinURLs = nil
	for k, u := range ip.urls {
		if k != i {
			cfg.JoinURLs = append(cfg.JoinURLs, u)
		}
	}
	var err error
	for try := 0; try < 50; try++ {
		var n *node.Node
		if n, err = server.Start(cfg); err == nil {
			ip.mu.Lock()
			ip.nodes[i] = n
			ip.mu.Unlock()
			return nil
		}
		if !sleep(ctx, 100*time.Millisecond) {
			break
		}
	}
	return fmt.Errorf("restart node %d: %w", i, err)
}

// RestartGracefully implements GracefulRestarter: node.Close (which hands
// leadership over), then Restart.
func (ip *InProcess) RestartGracefully(ctx context.Context, i int) error {
	ip.mu.Lock()
	n := ip.nodes[i]
	ip.nodes[i] = nil
	ip.mu.Unlock()
	if n != nil {
		if err := n.Close(); err != nil {
			return fmt.Errorf("close node %d: %w", i, err)
		}
	}
	return ip.Restart(ctx, i)
}

// Pause is not possible in process.
func (ip *InProcess) Pause(context.Context, int) error {
	return errors.New("chaos: an in-process node cannot be paused")
}

// Resume is not possible in process.
func (ip *InProcess) Resume(context.Context, int) error {
	return errors.New("chaos: an in-process node cannot be paused")
}

// Isolate implements FaultDriver with transport.Faults: each node is cut
// off from every other (the isolated ones from each other too).
func (ip *InProcess) Isolate(_ context.Context, nodes []int) error {
	for _, i := range nodes {
		ip.faults[i].Isolate()
	}
	return nil
}

// Heal implements FaultDriver.
func (ip *InProcess) Heal(context.Context) error {
	for _, f := range ip.faults {
		f.Heal()
	}
	return nil
}

// Close stops every running node gracefully.
func (ip *InProcess) Close() error {
	var err error
	for _, n := range ip.running() {
		err = errors.Join(err, n.Close())
	}
	return err
}
