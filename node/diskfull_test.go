//go:build linux

package node_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// mountTmpfs mounts a tmpfs of size (e.g. "16m") on a fresh directory and
// unmounts it when the test ends (after the nodes on it are closed: the
// cleanups run in reverse). Without the right to mount (not root, or a
// container without CAP_SYS_ADMIN) the test skips and says so.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0750"); err != nil {
		t.Skipf("SKIP: cannot mount a %s tmpfs for a small data directory (%v): this test needs root or CAP_SYS_ADMIN (CI runs as root)", size, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk writes a file into dir until its file system has no space
// left, and returns the file's path (remove it to free the space).
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("filler: %v", err)
	}
	defer f.Close()
	for _, chunk := range []int{1 << 20, 64 << 10, 4 << 10, 512} {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filler: %v", err)
				}
				break
			}
		}
	}
	return path
}

// diskCluster starts three nodes, node full with its data directory on a
// small tmpfs (node 0 bootstraps and is the leader). It returns the nodes
// and the tmpfs.
func diskCluster(t *testing.T, full int, opts ...testnode.Option) ([]*node.Node, string) {
	t.Helper()
	tmp := mountTmpfs(t, "24m")
	base := append([]testnode.Option{testnode.WithConfig(func(c *server.Config) {
		c.ClusterSecret = testnode.Secret
		c.LeaderWait = 3 * time.Second
		c.ApplyTimeout = 5 * time.Second
		// Looser than testnode's 200 ms: under -race, beside other
		// packages' tests, tighter timeouts make elections storm.
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 500*time.Millisecond, 500*time.Millisecond, 250*time.Millisecond
		// Snapshots and log compaction keep happening while the disk is
		// full, and the full node may come back through a snapshot.
		c.SnapshotThreshold = 64
		c.SnapshotInterval = 200 * time.Millisecond
		c.TrailingLogs = 32
	})}, opts...)
	var nodes []*node.Node
	for i := range 3 {
		o := append([]testnode.Option{}, base...)
		if i == full {
			o = append(o, testnode.WithDataDir(filepath.Join(tmp, "data")))
		}
		if i > 0 {
			o = append(o, testnode.WithConfig(func(c *server.Config) { c.JoinURLs = []string{nodes[0].URL()} }))
		}
		nodes = append(nodes, testnode.StartConfig(t, testnode.Config(t, o...)))
	}
	testnode.WaitMembers(t, nodes, 3)
	return nodes, tmp
}

// waitFor reports whether cond holds within d (testkit.Poll).
func waitFor(d time.Duration, cond func() bool) bool {
	return testkit.Poll(context.Background(), d, func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	}) == nil
}

// TestDiskFullFollower fills a follower's disk under load: it answers
// writes 503 (never 500, never a crash), keeps serving reads, says why on
// /readyz and /metrics, and after the space is freed catches up by itself;
// every acknowledged post is then on every node exactly once.
func TestDiskFullFollower(t *testing.T) {
	nodes, tmp := diskCluster(t, 1)
	testDiskFull(t, nodes, nodes[1], tmp)
}

// TestDiskFullLeader fills the leader's disk under load: besides what
// TestDiskFullFollower checks, leadership moves to a node that can write,
// which keeps taking writes meanwhile.
func TestDiskFullLeader(t *testing.T) {
	nodes, tmp := diskCluster(t, 0)
	if !nodes[0].IsLeader() {
		t.Skip("SKIP: the bootstrapping node lost leadership before the test began")
	}
	testDiskFull(t, nodes, nodes[0], tmp)
}

func testDiskFull(t *testing.T, nodes []*node.Node, full *node.Node, tmp string) {
	load := newFaultLoad(t)
	ctx, cancel := context.WithCancel(context.Background())
	load.setPhase("1-before")
	wg := load.run(ctx, nodes, 6)
	defer func() { cancel(); wg.Wait() }() // stop the load first, also when the test fails
	if !waitFor(20*time.Second, func() bool { return load.ackedCount() >= 20 }) {
		t.Fatal("no post acknowledged before the disk filled")
	}
	load.mu.Lock()
	var before string // an entry acknowledged before the disk filled
	for _, id := range load.acked {
		before = id
		break
	}
	load.mu.Unlock()
	if before == "" {
		t.Fatal("no post acknowledged before the disk filled")
	}
	testnode.WaitThread(t, []*node.Node{full}, before) // replicated to the node whose disk fills

	wasLeader := full.IsLeader()
	filler := fillDisk(t, tmp)
	load.setPhase("2-full")
	fullAt := time.Now()
	if !waitFor(10*time.Second, func() bool { return load.counts(full, http.StatusServiceUnavailable) > 0 && full.Ready() != nil }) {
		t.Fatalf("node %s: no 503 and still ready %v after its disk filled", full.ID(), full.Ready())
	}
	t.Logf("the full node refused writes %v after the disk filled: %v", time.Since(fullAt).Round(time.Millisecond), full.Ready())
	if wasLeader {
		if !waitFor(10*time.Second, func() bool {
			for _, n := range nodes {
				if n != full && n.IsLeader() {
					return true
				}
			}
			return false
		}) {
			t.Fatalf("leadership stayed on the full node %s", full.ID())
		}
		t.Logf("leadership left the full node %v after the disk filled", time.Since(fullAt).Round(time.Millisecond))
	}
	// Writes through the other nodes go on (after any election).
	acked := load.ackedCount()
	if !waitFor(20*time.Second, func() bool { return load.ackedCount() > acked+20 }) {
		t.Fatalf("the healthy nodes took no writes while %s was full", full.ID())
	}
	time.Sleep(time.Second) // writes and snapshots keep failing on the full node

	// What the full node says, and that it still serves reads.
	if r := testkit.Get(t, full.URL()+"/readyz"); r.Status != http.StatusServiceUnavailable || !strings.Contains(r.Body, "disk full") {
		t.Errorf("/readyz on the full node: %d %s", r.Status, r.Body)
	}
	if r := testkit.Get(t, full.URL()+"/api/v1/threads/"+before); r.Status != http.StatusOK {
		t.Errorf("reading an old entry on the full node: %d %s", r.Status, r.Body)
	}
	if r := testkit.Get(t, full.URL()+"/healthz"); r.Status != http.StatusOK {
		t.Errorf("/healthz on the full node: %d %s (a restart would not free any space)", r.Status, r.Body)
	}
	metrics := scrape(t, full)
	for _, want := range []string{"restarea_data_dir_unwritable 1", "restarea_data_dir_write_failures_total"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics of the full node lacks %q", want)
		}
	}
	load.mu.Lock()
	msg := load.messages[full.ID()]
	load.mu.Unlock()
	if !strings.Contains(msg, "disk full") {
		t.Errorf("the full node's 503 says %q, want it to say the disk is full", msg)
	}
	t.Logf("the full node's 503: %s", msg)

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	load.setPhase("3-freed")
	freedAt := time.Now()
	if !waitFor(20*time.Second, func() bool { return full.Ready() == nil }) {
		t.Fatalf("node %s not ready 20s after space was freed: %v", full.ID(), full.Ready())
	}
	t.Logf("the full node was ready again %v after space was freed", time.Since(freedAt).Round(time.Millisecond))
	n503 := load.counts(full, http.StatusServiceUnavailable)
	time.Sleep(time.Second)
	if !waitFor(5*time.Second, func() bool { return load.counts(full, http.StatusCreated) > 0 }) {
		t.Errorf("the freed node took no write after it was ready")
	}
	cancel()
	wg.Wait()
	if extra := load.counts(full, http.StatusServiceUnavailable) - n503; extra > 0 {
		t.Logf("%d more 503s from the freed node after it was ready (elections)", extra)
	}
	if !strings.Contains(scrape(t, full), "restarea_data_dir_unwritable 0") {
		t.Errorf("restarea_data_dir_unwritable still set after the space was freed")
	}
	load.resolve(nodes)
	load.verify(nodes)
	load.report()
}
