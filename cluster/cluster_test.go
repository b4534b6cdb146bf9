package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/cluster"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
	"github.com/restarea/restarea/transport"
)

var meta = testnode.Meta

func fastFailover(c *server.Config) {
	c.LeaderWait = 3 * time.Second
	c.ApplyTimeout = 5 * time.Second
}

// snapshotOften makes nodes snapshot and compact their logs after a few
// entries, so a node that falls behind is caught up by a snapshot install.
func snapshotOften(c *server.Config) {
	fastFailover(c)
	c.SnapshotThreshold = 20
	c.SnapshotInterval = 100 * time.Millisecond
	c.TrailingLogs = 5
}

// others returns nodes without n.
func others(nodes []*node.Node, n *node.Node) []*node.Node {
	var out []*node.Node
	for _, m := range nodes {
		if m != n {
			out = append(out, m)
		}
	}
	return out
}

// rejoin restarts a node on its data directory, joining through leader.
func rejoin(t *testing.T, dir string, leader *node.Node, opts func(*server.Config)) *node.Node {
	t.Helper()
	return testnode.StartConfig(t, testnode.Config(t, testnode.WithDataDir(dir), testnode.WithConfig(func(c *server.Config) {
		opts(c)
		c.ClusterSecret = testnode.Secret
		c.JoinURLs = []string{leader.URL()}
	})))
}

func TestJoinFormsClusterAndEveryNodeTakesWrites(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(fastFailover))
	for i, n := range nodes {
		res := testnode.Post(t, n, testkit.Question(fmt.Sprintf("through node %d", i)))
		if res.Replayed {
			t.Fatalf("first post through node %d answered replayed", i)
		}
		// Read-your-writes on the node written to, with no waiting.
		if _, err := n.GetThread(context.Background(), res.Entry.ID, restarea.ReadOptions{}); err != nil {
			t.Fatalf("node %d cannot read its own write: %v", i, err)
		}
		testnode.WaitThread(t, nodes, res.Entry.ID)
	}
	st, err := nodes[2].ClusterStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	leader := testnode.Leader(t, nodes)
	if st.LeaderID != leader.ID() || st.LeaderURL != leader.AdvertiseURL() || len(st.Members) != 3 {
		t.Fatalf("status from a follower: %+v (leader %s)", st, leader.ID())
	}
	for _, m := range st.Members {
		if m.URL == "" || m.Suffrage != "voter" {
			t.Fatalf("member without url or not a voter: %+v", m)
		}
	}
}

func TestFiveNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("five nodes")
	}
	nodes := testnode.StartCluster(t, 5, testnode.WithConfig(fastFailover))
	res := testnode.Post(t, nodes[4], testkit.Question("five"))
	testnode.WaitThread(t, nodes, res.Entry.ID)
}

func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

// expectNodes are nodes on addresses picked in advance that form a
// cluster by BootstrapExpect 3, the first three's URLs their join list.
type expectNodes struct{ http, raft, urls []string }

func newExpectNodes(t *testing.T, n int) expectNodes {
	e := expectNodes{http: freeAddrs(t, n), raft: freeAddrs(t, n)}
	for _, a := range e.http[:3] {
		e.urls = append(e.urls, "http://"+a)
	}
	return e
}

// start starts node i, with fast failover, and closes it when the test
// ends.
func (e expectNodes) start(t *testing.T, i int, opts ...testnode.Option) (*node.Node, error) {
	cfg := testnode.Config(t, append([]testnode.Option{testnode.WithConfig(func(c *server.Config) {
		c.HTTPAddr, c.RaftAddr = e.http[i], e.raft[i]
		c.JoinURLs, c.BootstrapExpect, c.ClusterSecret = e.urls, 3, testnode.Secret
		fastFailover(c)
	})}, opts...)...)
	n, err := server.Start(cfg)
	if err != nil {
		return nil, fmt.Errorf("start node %d: %w", i, err)
	}
	t.Cleanup(func() { n.Close() })
	return n, nil
}

func TestBootstrapExpectFormsClusterWithoutSpecialNode(t *testing.T) {
	expect := newExpectNodes(t, 3)
	var nodes []*node.Node
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := expect.start(t, i)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			nodes = append(nodes, n)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(nodes) != 3 {
		t.Fatal("not all nodes started")
	}
	testnode.WaitMembers(t, nodes, 3)
	res := testnode.Post(t, nodes[1], testkit.Question("formed"))
	testnode.WaitThread(t, nodes, res.Entry.ID)
}

// 64 identical posts at once, spread over every node over HTTP: one 201,
// the rest 200 replayed with the same id, one entry on every node.
func TestConcurrentDuplicatesAcrossNodes(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(fastFailover))
	req := testkit.Question("duplicate storm")
	body, _ := json.Marshal(req)
	const clients = 64
	codes := make([]int, clients)
	ids := make([]string, clients)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			url := nodes[i%len(nodes)].URL() + "/api/v1/entries"
			err := testkit.Poll(context.Background(), 30*time.Second, func() error { // a 503 is retried
				resp, err := http.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					t.Errorf("client %d: %v", i, err)
					return nil
				}
				var out struct {
					Data struct {
						ID string `json:"id"`
					} `json:"data"`
				}
				json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				if resp.StatusCode == http.StatusServiceUnavailable {
					return errors.New("503")
				}
				codes[i], ids[i] = resp.StatusCode, out.Data.ID
				return nil
			})
			if err != nil {
				t.Errorf("client %d: %v", i, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	created := 0
	for i := range clients {
		switch codes[i] {
		case http.StatusCreated:
			created++
		case http.StatusOK:
		default:
			t.Fatalf("client %d got %d", i, codes[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("client %d got id %s, client 0 got %s", i, ids[i], ids[0])
		}
	}
	if created != 1 {
		t.Fatalf("%d clients got 201, want exactly 1", created)
	}
	testnode.WaitThread(t, nodes, ids[0])
	for _, n := range nodes {
		page, err := n.ListThreads(context.Background(), restarea.ListOptions{})
		if err != nil || len(page.Threads) != 1 {
			t.Fatalf("node %s stores %d threads (%v), want 1", n.ID(), len(page.Threads), err)
		}
	}
}

// The leader dies mid-load: a new one is elected within seconds, writes
// resume, and every acknowledged entry is on every survivor.
func TestLeaderKilledMidLoad(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(fastFailover))
	leader := testnode.Leader(t, nodes)
	survivors := others(nodes, leader)
	var mu sync.Mutex
	acked := map[string]string{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := survivors[w%len(survivors)]
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req := testkit.Question(fmt.Sprintf("w%d-%d", w, i))
				var postErr error
				testkit.Poll(context.Background(), 30*time.Second, func() error { // unavailable is retried
					var res restarea.PostResult
					res, postErr = n.Post(context.Background(), req, meta)
					if postErr == nil {
						mu.Lock()
						acked[req.RequestID] = res.Entry.ID
						mu.Unlock()
					}
					if restarea.ErrorCode(postErr) == restarea.CodeUnavailable {
						return postErr
					}
					return nil
				})
				if postErr != nil && restarea.ErrorCode(postErr) != restarea.CodeUnavailable {
					t.Errorf("post: %v", postErr)
					return
				}
			}
		}()
	}
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	testkit.Eventually(t, 30*time.Second, "writes before the failover", func() error {
		if n := ackedCount(); n < 10 {
			return fmt.Errorf("%d acked", n)
		}
		return nil
	})
	killed := time.Now()
	leader.Kill()
	newLeader := testnode.Leader(t, survivors)
	t.Logf("new leader %s after %v", newLeader.ID(), time.Since(killed).Round(time.Millisecond))
	before := ackedCount()
	testkit.Eventually(t, 30*time.Second, "writes to resume after the failover", func() error {
		if n := ackedCount(); n < before+10 {
			return fmt.Errorf("%d acked before, %d now", before, n)
		}
		return nil
	})
	close(stop)
	wg.Wait()
	for reqID, id := range acked {
		testnode.WaitThread(t, survivors, id)
		_ = reqID
	}
	for _, n := range survivors {
		all, err := n.ListEntries(context.Background(), restarea.ListOptions{Limit: 200})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		count := 0
		for p := all; ; {
			for _, e := range p.Entries {
				if seen[e.RequestID] {
					t.Fatalf("request %s stored twice on %s", e.RequestID, n.ID())
				}
				seen[e.RequestID] = true
				count++
			}
			if p.NextCursor == nil {
				break
			}
			p, err = n.ListEntries(context.Background(), restarea.ListOptions{Cursor: *p.NextCursor, Limit: 200})
			if err != nil {
				t.Fatal(err)
			}
		}
		for reqID := range acked {
			if !seen[reqID] {
				t.Fatalf("acknowledged request %s missing on %s", reqID, n.ID())
			}
		}
		t.Logf("%s holds %d entries, %d acknowledged", n.ID(), count, len(acked))
	}
}

// A partitioned minority answers writes 503 unavailable, and catches up
// after the partition heals.
func TestMinorityPartitionUnavailableThenCatchesUp(t *testing.T) {
	faults := make([]*transport.Faults, 3)
	for i := range faults {
		faults[i] = &transport.Faults{}
	}
	var i int
	var mu sync.Mutex
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(func(c *server.Config) {
		fastFailover(c)
		c.LeaderWait = time.Second
		mu.Lock()
		c.Faults = faults[i]
		i++
		mu.Unlock()
	}))
	leader := testnode.Leader(t, nodes)
	var minority *node.Node
	var minorityFaults *transport.Faults
	var majority []*node.Node
	for k, n := range nodes {
		if n != leader && minority == nil {
			minority, minorityFaults = n, faults[k]
			continue
		}
		majority = append(majority, n)
	}
	minorityFaults.Isolate()
	_, err := minority.Post(context.Background(), testkit.Question("into the void"), meta)
	if restarea.ErrorCode(err) != restarea.CodeUnavailable {
		t.Fatalf("write on an isolated node: %v, want 503 unavailable", err)
	}
	res := testnode.Post(t, majority[1], testkit.Question("majority still writes"))
	minorityFaults.Heal()
	testnode.WaitThread(t, nodes, res.Entry.ID)
	res2 := testnode.Post(t, minority, testkit.Question("healed node writes again"))
	testnode.WaitThread(t, nodes, res2.Entry.ID)
}

// A node restarted on its data dir (on a new address) catches up; one that
// fell behind further than the trailing logs is caught up by a snapshot.
func TestRestartedNodeCatchesUpBySnapshot(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(snapshotOften))
	leader := testnode.Leader(t, nodes)
	lagger := others(nodes, leader)[0]
	dir := lagger.DataDir()
	lag, err := lagger.ClusterStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lagger.Close()
	var last restarea.PostResult
	for i := range 60 {
		last = testnode.Post(t, leader, testkit.Question(fmt.Sprintf("while away %d", i)))
	}
	// The leader snapshots and compacts past what the lagger has (it keeps
	// TrailingLogs entries before its snapshot).
	testkit.Eventually(t, 30*time.Second, "a leader's snapshot past the lagger", func() error {
		if idx := snapshotIndex(t, leader.DataDir()); idx <= lag.AppliedIndex+5 {
			return fmt.Errorf("latest snapshot at %d, the lagger applied %d", idx, lag.AppliedIndex)
		}
		return nil
	})
	restarted := rejoin(t, dir, leader, fastFailover)
	testnode.WaitThread(t, []*node.Node{restarted}, last.Entry.ID)
	snaps, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "meta.json"))
	if len(snaps) == 0 {
		t.Fatalf("lagging node caught up without a snapshot install")
	}
	page, err := restarted.ListThreads(context.Background(), restarea.ListOptions{Limit: 200})
	if err != nil || len(page.Threads) != 60 {
		t.Fatalf("restarted node has %d threads (%v), want 60", len(page.Threads), err)
	}
	st, _ := leader.ClusterStatus(context.Background())
	for _, m := range st.Members {
		if m.ID == restarted.ID() && m.RaftAddr != restarted.RaftAddr() {
			t.Fatalf("raft address not updated after restart: %s, now %s", m.RaftAddr, restarted.RaftAddr())
		}
	}
}

func TestRemoveNodeAndTransferLeadership(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(fastFailover))
	leader := testnode.Leader(t, nodes)
	var followers []*node.Node
	for _, n := range nodes {
		if n != leader {
			followers = append(followers, n)
		}
	}
	ctx := context.Background()
	// Transfer through a follower, naming the other follower.
	if err := followers[0].TransferLeadership(ctx, followers[1].ID()); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	testkit.Eventually(t, 20*time.Second, "leadership to move to the named node", func() error {
		if !followers[1].IsLeader() {
			return errors.New("not leader")
		}
		return nil
	})
	// Remove the old leader through the old leader itself. On a busy
	// machine leadership may move while the removal commits: its outcome
	// is then unknown (unavailable), and asking again either removes it
	// or finds it gone.
	unknown := false
	testkit.Eventually(t, 30*time.Second, "the removal of "+followers[0].ID(), func() error {
		err := leader.RemoveMember(ctx, followers[0].ID())
		switch {
		case err == nil, unknown && restarea.ErrorCode(err) == restarea.CodeNotFound:
			return nil
		case restarea.ErrorCode(err) == restarea.CodeUnavailable:
			unknown = true
			return err
		}
		t.Fatalf("remove: %v", err)
		return nil
	})
	left := []*node.Node{leader, followers[1]}
	testnode.WaitMembers(t, left, 2)
	if err := leader.RemoveMember(ctx, "no-such-node"); restarea.ErrorCode(err) != restarea.CodeNotFound {
		t.Fatalf("removing an unknown node: %v", err)
	}
	res := testnode.Post(t, leader, testkit.Question("after removal"))
	testnode.WaitThread(t, left, res.Entry.ID)
}

// A node with the wrong secret cannot open the internal channel (the
// transport handshake refuses it, so the forward is certainly not applied)
// nor join through the public port (the signature is refused), and both
// refusals are counted.
func TestWrongSecretRefused(t *testing.T) {
	nodes := testnode.StartCluster(t, 2, testnode.WithConfig(fastFailover))
	leader := testnode.Leader(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	wrong := []byte("not-the-cluster-secret-at-all")
	mux, err := transport.Listen(transport.Config{BindAddr: "127.0.0.1:0", Secret: wrong})
	if err != nil {
		t.Fatal(err)
	}
	defer mux.Close()
	bad := &cluster.Client{Internal: mux.HTTPClient(5 * time.Second), Public: http.DefaultClient, Secret: wrong}
	err = bad.JoinVia(ctx, leader.URL(), cluster.JoinRequest{ID: "intruder", RaftAddr: "127.0.0.1:1", URL: "http://127.0.0.1:1"})
	if restarea.ErrorCode(err) != restarea.CodeUnauthorized {
		t.Fatalf("join with a wrong secret: %v, want unauthorized", err)
	}
	req := testkit.Question("spoofed")
	_, err = bad.Apply(ctx, leader.RaftAddr(), forgedPost(req))
	if !errors.Is(err, cluster.ErrNotApplied) || !strings.Contains(err.Error(), "cluster-secret") {
		t.Fatalf("forward with a wrong secret: %v, want not applied (handshake refused)", err)
	}
	st, _ := leader.ClusterStatus(ctx)
	if len(st.Members) != 2 {
		t.Fatalf("intruder joined: %+v", st.Members)
	}
	if n := metric(t, leader, "restarea_cluster_conn_refused_total", map[string]string{"reason": "auth"}); n < 1 {
		t.Fatalf("refused handshakes counted: %v", n)
	}
	if n := metric(t, leader, "restarea_cluster_requests_refused_total", map[string]string{"reason": "unauthenticated"}); n != 1 {
		t.Fatalf("refused signed requests counted: %v, want 1", n)
	}
	// A node started with --join but no secret refuses to start.
	cfg := testnode.Config(t, testnode.WithConfig(func(c *server.Config) { c.JoinURLs = []string{leader.URL()} }))
	if n, err := server.Start(cfg); err == nil {
		n.Close()
		t.Fatal("a node with --join and no secret started")
	}
}

// snapshotIndex returns the log index of the newest snapshot in a node's
// data directory (0 without one).
func snapshotIndex(t *testing.T, dir string) uint64 {
	t.Helper()
	metas, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "meta.json"))
	var newest uint64
	for _, m := range metas {
		b, err := os.ReadFile(m)
		if err != nil {
			continue // being written or removed
		}
		var meta struct{ Index uint64 }
		if json.Unmarshal(b, &meta) == nil {
			newest = max(newest, meta.Index)
		}
	}
	return newest
}
