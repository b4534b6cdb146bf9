// Package localcluster runs a rest.area cluster of real node processes on
// loopback, for the chaos and bench commands: each node gets its own data
// directory, its own loopback address for raft and a fault proxy in front
// of its raft port, so a node can be killed, paused, restarted and
// partitioned from the others.
package localcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options describe a local cluster.
type Options struct {
	// Binary is the restarea executable every node starts with; "" → the
	// running executable. SetBinary changes it per node (a rolling
	// upgrade). Each node gets only the flags its binary's `serve --help`
	// lists (Binary.Filter).
	Binary string
	// Nodes is the number of nodes (at least 1).
	Nodes int
	// Dir holds the nodes' data directories and logs; "" → a temporary
	// directory removed by Close.
	Dir string
	// Secret and AdminToken; "" → random.
	Secret     string
	AdminToken string
	// Args are extra `restarea serve` flags for every node; a flag with a
	// value is written "--name=value", so that it can be left out for a
	// binary that does not know it (Binary.Filter).
	Args []string
	// Direct leaves out the fault proxies: peers dial each other's raft
	// port directly (for benchmarks); Partition then does nothing.
	Direct bool
	// TestClock starts every node with a test clock offset file
	// (SetClockOffset steps its wall clock), for chaos tests of clock
	// faults.
	TestClock bool
	// Pprof serves Go's profiler on every node, each on its own loopback
	// port (Node.PprofAddr), for profiling a node under load.
	Pprof bool
	// PowerFS puts each node's data directory on powerfs (a FUSE file
	// system that simulates power cuts, internal/powerfs), its disk beside
	// it, so that PowerCut and PowerOn can cut and restore its power.
	PowerFS bool
	// Logf receives progress lines; nil → silent.
	Logf func(format string, args ...any)
}

// Node is one node process.
type Node struct {
	Index    int
	ID       string
	URL      string
	RaftAddr string // the address peers dial (the fault proxy)
	DataDir  string
	LogFile  string
	// Binary is the executable the node runs (from its next start, after
	// SetBinary).
	Binary string
	// PprofAddr is where the node serves /debug/pprof/ ("" unless
	// Options.Pprof).
	PprofAddr string

	bindRaft string
	httpAddr string
	cmd      *exec.Cmd
	exited   chan struct{}
	// exitErr is how the process ended; read only after exited closed.
	exitErr error
	paused  bool
	// joinOnly leaves --bootstrap-expect out: the node joins a formed
	// cluster (a node added later, or one whose data was wiped).
	joinOnly bool
	// out marks a node removed from the cluster and stopped (an extra
	// node after a shrink): WaitReady neither waits for it nor counts it.
	out bool
	// power is the simulated machine under its data directory (PowerFS).
	power *powerNode
}

// Pid returns the node's process id, or 0 when it is not running.
func (n *Node) Pid() int {
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// Cluster is a running local cluster.
type Cluster struct {
	opts    Options
	nodes   []*Node
	proxies []*proxy
	from    *sources
	tempDir bool
	bins    binaries
	mu      sync.Mutex
	client  *http.Client
}

func random() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func freePort(ip string) (string, error) {
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Start starts the nodes (they form a cluster with --bootstrap-expect)
// and waits, within ctx, until every node is ready and sees all members.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Nodes < 1 {
		return nil, errors.New("localcluster: at least one node")
	}
	if opts.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		opts.Binary = exe
	}
	if opts.Secret == "" {
		opts.Secret = random()
	}
	if opts.AdminToken == "" {
		opts.AdminToken = random()
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	c := &Cluster{opts: opts, client: &http.Client{Timeout: 5 * time.Second}}
	if opts.Dir == "" {
		dir, err := os.MkdirTemp("", "restarea-local-")
		if err != nil {
			return nil, err
		}
		c.opts.Dir, c.tempDir = dir, true
	}
	if err := c.prepare(); err != nil {
		c.Close()
		return nil, err
	}
	for i := range c.nodes {
		if err := c.start(i); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.waitReady(ctx, true); err != nil {
		c.Close()
		return nil, err
	}
	opts.Logf("local cluster of %d nodes ready in %s", opts.Nodes, c.opts.Dir)
	return c, nil
}

// prepare picks addresses: node i speaks raft from 127.0.0.(10+i), behind
// a proxy on 127.0.0.1 that peers dial.
func (c *Cluster) prepare() error {
	c.from = &sources{m: map[string]int{}}
	for i := 0; i < c.opts.Nodes; i++ {
		n, err := c.newNode(i)
		if err != nil {
			return err
		}
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		if err := c.addProxy(n); err != nil {
			return err
		}
	}
	return nil
}

// newNode picks the addresses and directories of node i.
func (c *Cluster) newNode(i int) (*Node, error) {
	if i > 200 {
		return nil, fmt.Errorf("localcluster: at most 200 nodes")
	}
	ip := fmt.Sprintf("127.0.0.%d", 10+i)
	c.from.set(ip, i)
	bind, err := freePort(ip)
	if err != nil {
		return nil, fmt.Errorf("localcluster: loopback address %s: %w", ip, err)
	}
	httpAddr, err := freePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	var pprofAddr string
	if c.opts.Pprof {
		if pprofAddr, err = freePort("127.0.0.1"); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(c.opts.Dir, fmt.Sprintf("node%d", i+1))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	return &Node{
		Index: i, ID: fmt.Sprintf("node%d", i+1), URL: "http://" + httpAddr, DataDir: dir,
		LogFile: filepath.Join(c.opts.Dir, fmt.Sprintf("node%d.log", i+1)), bindRaft: bind, httpAddr: httpAddr,
		PprofAddr: pprofAddr, Binary: c.opts.Binary,
	}, nil
}

// addProxy puts the fault proxy in front of n's raft port (or, Direct,
// lets peers dial it).
func (c *Cluster) addProxy(n *Node) error {
	if c.opts.Direct {
		n.RaftAddr = n.bindRaft
		return nil
	}
	p, err := newProxy("127.0.0.1:0", n.bindRaft, c.from)
	if err != nil {
		return err
	}
	c.proxies = append(c.proxies, p)
	n.RaftAddr = p.addr()
	return nil
}

func (c *Cluster) args(n *Node) []string {
	var urls []string
	for _, m := range c.nodes {
		urls = append(urls, m.URL)
	}
	// Every flag with a value is "--name=value": Binary.Filter can then
	// leave out, for an older binary, a flag it does not know.
	args := []string{"serve",
		"--node-id=" + n.ID, "--data-dir=" + n.DataDir,
		"--http-addr=" + n.httpAddr, "--advertise-url=" + n.URL, "--public-url=" + c.nodes[0].URL,
		"--raft-addr=" + n.bindRaft, "--raft-advertise=" + n.RaftAddr,
		"--admin-token=" + c.opts.AdminToken,
		// Every client of a local cluster is one loopback address: the
		// per-source bound on expensive requests would serialise them.
		"--max-expensive-requests-per-source=-1",
	}
	switch {
	case n.joinOnly:
		args = append(args, "--join="+strings.Join(urls, ","), "--cluster-secret="+c.opts.Secret)
	case c.opts.Nodes > 1:
		args = append(args, "--join="+strings.Join(urls[:c.opts.Nodes], ","), "--bootstrap-expect="+fmt.Sprint(c.opts.Nodes),
			"--cluster-secret="+c.opts.Secret)
	}
	if c.opts.TestClock {
		args = append(args, "--allow-test-clock", "--test-clock-offset-file="+c.clockFile(n))
	}
	if n.PprofAddr != "" {
		args = append(args, "--pprof-addr="+n.PprofAddr)
	}
	args = append(args, c.powerArgs(n)...)
	return append(args, c.opts.Args...)
}

func (c *Cluster) start(i int) error {
	n := c.nodes[i]
	if err := c.mountPower(n); err != nil {
		return err
	}
	c.mu.Lock()
	binary := n.Binary
	c.mu.Unlock()
	bin, err := c.bins.get(binary)
	if err != nil {
		return err
	}
	args, err := bin.Filter(c.args(n))
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(n.LogFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = os.Environ()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("localcluster: start %s: %w", n.ID, err)
	}
	exited := make(chan struct{})
	go func() { n.exitErr = cmd.Wait(); logf.Close(); close(exited) }()
	c.mu.Lock()
	n.cmd, n.exited, n.paused = cmd, exited, false
	c.mu.Unlock()
	return nil
}

// SetBinary makes node i run binary from its next start (Restart,
// RestartGracefully, StartAs), on the same data directory, id and
// addresses, and returns what the binary says of itself.
func (c *Cluster) SetBinary(i int, binary string) (Binary, error) {
	if i < 0 || i >= len(c.nodes) {
		return Binary{}, fmt.Errorf("localcluster: no node %d", i)
	}
	if binary == "" {
		return Binary{}, errNoBinary
	}
	b, err := c.bins.get(binary)
	if err != nil {
		return Binary{}, err
	}
	c.mu.Lock()
	c.nodes[i].Binary = binary
	c.mu.Unlock()
	return b, nil
}

// Inspect returns what binary says of itself (asked once per cluster).
func (c *Cluster) Inspect(binary string) (Binary, error) { return c.bins.get(binary) }

// Nodes returns the nodes, in index order.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// AdminToken returns the admin bearer token every node accepts.
func (c *Cluster) AdminToken() string { return c.opts.AdminToken }

// Running reports whether node i's process is alive.
func (c *Cluster) Running(i int) bool {
	n := c.nodes[i]
	if n.exited == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL to node i and waits for it to exit.
func (c *Cluster) Kill(i int) error {
	n := c.nodes[i]
	if !c.Running(i) {
		return nil
	}
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-n.exited
	return nil
}

// Restart starts node i again on its data directory and addresses (after
// killing it if it still runs).
func (c *Cluster) Restart(i int) error {
	if err := c.Kill(i); err != nil {
		return err
	}
	return c.start(i)
}

// Stop stops node i the way an operator does: SIGTERM, which makes
// `restarea serve` hand leadership over, finish the requests in flight
// and close its stores. If the process has not exited within timeout it
// is killed, and Stop says so; a non-zero exit status is an error too.
func (c *Cluster) Stop(i int, timeout time.Duration) error {
	n := c.nodes[i]
	if !c.Running(i) {
		return nil
	}
	c.mu.Lock()
	paused := n.paused
	n.paused = false
	c.mu.Unlock()
	if paused {
		n.cmd.Process.Signal(syscall.SIGCONT)
	}
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-n.exited:
	case <-t.C:
		c.Kill(i)
		return fmt.Errorf("localcluster: %s did not exit within %s of SIGTERM and was killed (log %s)", n.ID, timeout, n.LogFile)
	}
	if n.exitErr != nil {
		return fmt.Errorf("localcluster: %s exited after SIGTERM: %v (log %s)", n.ID, n.exitErr, n.LogFile)
	}
	return nil
}

// RestartGracefully stops node i with Stop and starts it again on its
// data directory and addresses.
func (c *Cluster) RestartGracefully(i int, timeout time.Duration) error {
	if err := c.Stop(i, timeout); err != nil {
		return err
	}
	return c.start(i)
}

// Pause stops node i with SIGSTOP; Resume continues it.
func (c *Cluster) Pause(i int) error { return c.signal(i, syscall.SIGSTOP, true) }

// Resume continues a paused node with SIGCONT.
func (c *Cluster) Resume(i int) error { return c.signal(i, syscall.SIGCONT, false) }

func (c *Cluster) signal(i int, s syscall.Signal, paused bool) error {
	if !c.Running(i) {
		return fmt.Errorf("localcluster: node %d not running", i)
	}
	c.mu.Lock()
	c.nodes[i].paused = paused
	c.mu.Unlock()
	return c.nodes[i].cmd.Process.Signal(s)
}

// Partition cuts raft and internal traffic between the groups: nodes in
// different groups cannot reach each other; nodes in no group form one
// more group together. Existing connections across the cut are closed.
func (c *Cluster) Partition(groups ...[]int) {
	group := make([]int, len(c.nodes))
	for i := range group {
		group[i] = -1
	}
	for g, members := range groups {
		for _, i := range members {
			if i >= 0 && i < len(group) {
				group[i] = g
			}
		}
	}
	for i, p := range c.proxies {
		i := i
		p.setBlocked(func(from int) bool { return from >= 0 && group[from] != group[i] })
	}
}

// Heal removes every partition.
func (c *Cluster) Heal() {
	for _, p := range c.proxies {
		p.setBlocked(func(int) bool { return false })
	}
}

// Status is the part of GET /api/v1/cluster the tools use.
type Status struct {
	NodeID       string `json:"node_id"`
	LeaderID     string `json:"leader_id"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	Members      []struct {
		ID string `json:"id"`
	} `json:"members"`
}

// Status asks node i for its view of the cluster.
func (c *Cluster) Status(ctx context.Context, i int) (Status, error) {
	var st struct {
		Data Status `json:"data"`
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.nodes[i].URL+"/api/v1/cluster", nil)
	resp, err := c.client.Do(req)
	if err != nil {
		return Status{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Status{}, fmt.Errorf("%s: %s", c.nodes[i].ID, resp.Status)
	}
	return st.Data, json.NewDecoder(resp.Body).Decode(&st)
}

// Leader returns the index of the node the running nodes agree leads.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	for {
		votes := map[string]int{}
		running := 0
		for i := range c.nodes {
			if !c.Running(i) || c.nodes[i].paused {
				continue
			}
			running++
			if st, err := c.Status(ctx, i); err == nil && st.LeaderID != "" {
				votes[st.LeaderID]++
			}
		}
		for id, v := range votes {
			if v*2 > running {
				for i, n := range c.nodes {
					if n.ID == id {
						return i, nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("localcluster: no agreed leader: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// WaitReady waits until every running, unpaused node answers /readyz and
// sees every member.
func (c *Cluster) WaitReady(ctx context.Context) error { return c.waitReady(ctx, false) }

// waitReady is WaitReady; with all, a node whose process ended (one just
// started, by Start) fails the wait at once instead of being left out.
func (c *Cluster) waitReady(ctx context.Context, all bool) error {
	last := time.Now()
	for {
		ready := 0
		want := 0
		for i := range c.nodes {
			if c.nodes[i].paused || c.nodes[i].out {
				continue
			}
			if !c.Running(i) {
				if all {
					return fmt.Errorf("localcluster: a node stopped while the cluster started (logs in %s)%s", c.opts.Dir, c.exited())
				}
				continue
			}
			want++
			if c.ready(ctx, i) {
				ready++
			}
		}
		if ready == want {
			return nil
		}
		if time.Since(last) > 5*time.Second {
			c.opts.Logf("waiting for nodes: %d of %d ready", ready, want)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("localcluster: %d of %d nodes ready (logs in %s): %w%s", ready, want, c.opts.Dir, ctx.Err(), c.exited())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// exited describes the nodes whose process ended although they should run
// (how it ended and the end of its log), for an error that would
// otherwise only count them: a temporary directory is gone by the time
// anyone reads it.
func (c *Cluster) exited() string {
	var b strings.Builder
	for i, n := range c.nodes {
		if n.exited == nil || n.out || c.Running(i) {
			continue
		}
		fmt.Fprintf(&b, "; %s exited (%v)", n.ID, n.exitErr)
		if log, err := os.ReadFile(n.LogFile); err == nil {
			lines := strings.Split(strings.TrimSpace(string(log)), "\n")
			fmt.Fprintf(&b, ", its log ends: %s", strings.Join(lines[max(0, len(lines)-5):], " | "))
		}
	}
	return b.String()
}

func (c *Cluster) ready(ctx context.Context, i int) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.nodes[i].URL+"/readyz", nil)
	resp, err := c.client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	st, err := c.Status(ctx, i)
	return err == nil && len(st.Members) == c.members()
}

// members counts the nodes that are not out.
func (c *Cluster) members() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := 0
	for _, n := range c.nodes {
		if !n.out {
			k++
		}
	}
	return k
}

// Close stops every node (SIGTERM, then SIGKILL after 10s), closes the
// proxies and removes the directory if Start created it.
func (c *Cluster) Close() error {
	c.Heal()
	for i, n := range c.nodes {
		if !c.Running(i) {
			continue
		}
		if n.paused {
			n.cmd.Process.Signal(syscall.SIGCONT)
		}
		n.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(10 * time.Second)
	for i, n := range c.nodes {
		if n.exited == nil {
			continue
		}
		select {
		case <-n.exited:
		case <-deadline:
			c.Kill(i)
		}
	}
	for _, p := range c.proxies {
		p.close()
	}
	c.closePower()
	if c.tempDir {
		return os.RemoveAll(c.opts.Dir)
	}
	return nil
}
