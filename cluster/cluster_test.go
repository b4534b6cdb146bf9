package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/cluster"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
	"github.com/restarea/restarea/transport"
)

func question(title string) restarea.PostRequest {
	return restarea.PostRequest{
		RequestID: uuid.NewString(), Type: restarea.TypeQuestion, Title: title, Body: "body of " + title,
		Actor: restarea.Actor{Name: "tester"}, SubmissionMode: restarea.ModeAutonomous,
	}
}

var meta = restarea.PostMeta{Source: "203.0.113.9", Channel: restarea.ChannelHTTP}

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

// postRetry posts like a careful client: 503 answers are retried with the
// same request, a bounded number of times.
func postRetry(t *testing.T, n *node.Node, req restarea.PostRequest) restarea.PostResult {
	t.Helper()
	var err error
	for i := 0; i < 40; i++ {
		var res restarea.PostResult
		res, err = n.Post(context.Background(), req, meta)
		if err == nil {
			return res
		}
		if restarea.ErrorCode(err) != restarea.CodeUnavailable {
			t.Fatalf("post through %s: %v", n.ID(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("post through %s never succeeded: %v", n.ID(), err)
	return restarea.PostResult{}
}

// waitHas waits until every node can read the question id locally.
func waitHas(t *testing.T, nodes []*node.Node, id string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for _, n := range nodes {
		for {
			if _, err := n.GetThread(context.Background(), id, restarea.ReadOptions{}); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s never saw thread %s", n.ID(), id)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestJoinFormsClusterAndEveryNodeTakesWrites(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(fastFailover))
	for i, n := range nodes {
		res := postRetry(t, n, question(fmt.Sprintf("through node %d", i)))
		if res.Replayed {
			t.Fatalf("first post through node %d answered replayed", i)
		}
		// Read-your-writes on the node written to, with no waiting.
		if _, err := n.GetThread(context.Background(), res.Entry.ID, restarea.ReadOptions{}); err != nil {
			t.Fatalf("node %d cannot read its own write: %v", i, err)
		}
		waitHas(t, nodes, res.Entry.ID)
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
	res := postRetry(t, nodes[4], question("five"))
	waitHas(t, nodes, res.Entry.ID)
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

func TestBootstrapExpectFormsClusterWithoutSpecialNode(t *testing.T) {
	httpAddrs, raftAddrs := freeAddrs(t, 3), freeAddrs(t, 3)
	var urls []string
	for _, a := range httpAddrs {
		urls = append(urls, "http://"+a)
	}
	var nodes []*node.Node
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := testnode.Config(t, testnode.WithConfig(func(c *server.Config) {
				c.HTTPAddr, c.RaftAddr = httpAddrs[i], raftAddrs[i]
				c.JoinURLs, c.BootstrapExpect, c.ClusterSecret = urls, 3, testnode.Secret
				fastFailover(c)
			}))
			n, err := server.Start(cfg)
			if err != nil {
				t.Errorf("start %d: %v", i, err)
				return
			}
			t.Cleanup(func() { n.Close() })
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
	res := postRetry(t, nodes[1], question("formed"))
	waitHas(t, nodes, res.Entry.ID)
}

// 64 identical posts at once, spread over every node over HTTP: one 201,
// the rest 200 replayed with the same id, one entry on every node.
func TestConcurrentDuplicatesAcrossNodes(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(fastFailover))
	req := question("duplicate storm")
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
			for attempt := 0; attempt < 20; attempt++ {
				resp, err := http.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					t.Errorf("client %d: %v", i, err)
					return
				}
				var out struct {
					Data struct {
						ID string `json:"id"`
					} `json:"data"`
				}
				json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				if resp.StatusCode == http.StatusServiceUnavailable {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				codes[i], ids[i] = resp.StatusCode, out.Data.ID
				return
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
	waitHas(t, nodes, ids[0])
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
				req := question(fmt.Sprintf("w%d-%d", w, i))
				for attempt := 0; attempt < 60; attempt++ {
					res, err := n.Post(context.Background(), req, meta)
					if err == nil {
						mu.Lock()
						acked[req.RequestID] = res.Entry.ID
						mu.Unlock()
						break
					}
					if restarea.ErrorCode(err) != restarea.CodeUnavailable {
						t.Errorf("post: %v", err)
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	killed := time.Now()
	leader.Kill()
	newLeader := testnode.Leader(t, survivors)
	t.Logf("new leader %s after %v", newLeader.ID(), time.Since(killed).Round(time.Millisecond))
	mu.Lock()
	before := len(acked)
	mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= before+10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes did not resume after failover (%d acked before, %d now)", before, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	for reqID, id := range acked {
		waitHas(t, survivors, id)
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
	_, err := minority.Post(context.Background(), question("into the void"), meta)
	if restarea.ErrorCode(err) != restarea.CodeUnavailable {
		t.Fatalf("write on an isolated node: %v, want 503 unavailable", err)
	}
	res := postRetry(t, majority[1], question("majority still writes"))
	minorityFaults.Heal()
	waitHas(t, nodes, res.Entry.ID)
	res2 := postRetry(t, minority, question("healed node writes again"))
	waitHas(t, nodes, res2.Entry.ID)
}

// A node restarted on its data dir (on a new address) catches up; one that
// fell behind further than the trailing logs is caught up by a snapshot.
func TestRestartedNodeCatchesUpBySnapshot(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(snapshotOften))
	leader := testnode.Leader(t, nodes)
	lagger := others(nodes, leader)[0]
	dir := lagger.DataDir()
	lagger.Close()
	var last restarea.PostResult
	for i := range 60 {
		last = postRetry(t, leader, question(fmt.Sprintf("while away %d", i)))
	}
	// Let the leader snapshot and compact past what the lagger has.
	time.Sleep(500 * time.Millisecond)
	restarted := rejoin(t, dir, leader, fastFailover)
	waitHas(t, []*node.Node{restarted}, last.Entry.ID)
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
	deadline := time.Now().Add(10 * time.Second)
	for !followers[1].IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("leadership did not move to the named node")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Remove the old leader through the old leader itself.
	if err := leader.RemoveMember(ctx, followers[0].ID()); err != nil {
		t.Fatalf("remove: %v", err)
	}
	left := []*node.Node{leader, followers[1]}
	testnode.WaitMembers(t, left, 2)
	if err := leader.RemoveMember(ctx, "no-such-node"); restarea.ErrorCode(err) != restarea.CodeNotFound {
		t.Fatalf("removing an unknown node: %v", err)
	}
	res := postRetry(t, leader, question("after removal"))
	waitHas(t, left, res.Entry.ID)
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
	req := question("spoofed")
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
