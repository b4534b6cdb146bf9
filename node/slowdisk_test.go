package node_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// slowDisk delays, while on, every raft log append and every state-file
// commit of one node by 50–500 ms, as a saturated or failing disk would.
type slowDisk struct {
	on      atomic.Bool
	delayed atomic.Int64
}

func (s *slowDisk) pause() {
	if s.on.Load() {
		s.delayed.Add(1)
		time.Sleep(50*time.Millisecond + rand.N(450*time.Millisecond))
	}
}

func (s *slowDisk) hooks() *node.DiskHooks {
	return &node.DiskHooks{
		WrapLogStore: func(l raft.LogStore) raft.LogStore { return slowLogStore{l, s} },
		BeforeCommit: func(int) { s.pause() },
	}
}

type slowLogStore struct {
	raft.LogStore
	s *slowDisk
}

func (l slowLogStore) StoreLog(e *raft.Log) error {
	l.s.pause()
	return l.LogStore.StoreLog(e)
}

func (l slowLogStore) StoreLogs(es []*raft.Log) error {
	l.s.pause()
	return l.LogStore.StoreLogs(es)
}

// slowCluster starts three nodes, each with its own slowDisk (off).
func slowCluster(t *testing.T) ([]*node.Node, []*slowDisk) {
	t.Helper()
	var nodes []*node.Node
	var disks []*slowDisk
	for i := range 3 {
		d := &slowDisk{}
		o := []testnode.Option{testnode.WithConfig(func(c *server.Config) {
			c.ClusterSecret = testnode.Secret
			c.LeaderWait = 3 * time.Second
			c.ApplyTimeout = 5 * time.Second
			// Looser than testnode's 200 ms: under -race, beside other
			// packages' tests, tighter timeouts make elections storm.
			c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 500*time.Millisecond, 500*time.Millisecond, 250*time.Millisecond
			c.DiskHooks = d.hooks()
			if i > 0 {
				c.JoinURLs = []string{nodes[0].URL()}
			}
		})}
		nodes = append(nodes, testnode.StartConfig(t, testnode.Config(t, o...)))
		disks = append(disks, d)
	}
	testnode.WaitMembers(t, nodes, 3)
	return nodes, disks
}

// TestSlowDiskFollower slows one follower's disk under load: it falls
// behind, but the posts it answers need not take longer (it answers a
// forwarded write on the leader's result, and the other follower makes
// the quorum), and no acknowledged post is lost or stored twice.
func TestSlowDiskFollower(t *testing.T) {
	testSlowDisk(t, false)
}

// TestSlowDiskLeader slows the leader's disk under load: every write
// takes longer (or answers 503 past the apply timeout), none is lost or
// stored twice. Raft does not replace a leader whose disk is merely slow:
// its heartbeats do not touch the disk, so the followers never time it
// out; the test reports whether leadership moved.
func TestSlowDiskLeader(t *testing.T) {
	testSlowDisk(t, true)
}

func testSlowDisk(t *testing.T, leader bool) {
	nodes, disks := slowCluster(t)
	load := newFaultLoad(t)
	ctx, cancel := context.WithCancel(context.Background())
	load.setPhase("1-fast")
	wg := load.run(ctx, nodes, 6)
	defer func() { cancel(); wg.Wait() }() // stop the load first, also when the test fails
	time.Sleep(2 * time.Second)

	// The node to slow down is chosen now: leadership may have moved
	// while the load started.
	var slow *node.Node
	var disk *slowDisk
	for i, n := range nodes {
		if n.IsLeader() == leader {
			slow, disk = n, disks[i]
			break
		}
	}
	if slow == nil {
		t.Fatalf("no node with leader=%v", leader)
	}
	disk.on.Store(true)
	load.setPhase("2-slow")
	slowAt := time.Now()
	lostAfter := time.Duration(0)
	for time.Since(slowAt) < 5*time.Second {
		if leader && lostAfter == 0 && !slow.IsLeader() {
			lostAfter = time.Since(slowAt)
		}
		time.Sleep(10 * time.Millisecond)
	}
	disk.on.Store(false)
	load.setPhase("3-healed")
	time.Sleep(2 * time.Second)
	cancel()
	wg.Wait()

	load.resolve(nodes)
	load.verify(nodes)
	load.report()
	t.Logf("%d disk operations delayed on %s (leader: %v)", disk.delayed.Load(), slow.ID(), leader)
	if leader {
		if lostAfter > 0 {
			t.Logf("the slow leader lost leadership %v after its disk slowed (an election, not a deliberate hand-over)", lostAfter.Round(time.Millisecond))
		} else {
			t.Logf("the slow leader kept leadership for the 5 s its disk was slow")
		}
	}
	if disk.delayed.Load() == 0 {
		t.Fatal("the slow disk delayed nothing")
	}
	_, fast99, _ := load.latency("1-fast")
	slow50, slow99, n := load.latency("2-slow")
	n503 := load.counts(slow, http.StatusServiceUnavailable)
	t.Logf("acknowledged latency p99 %v before; p50 %v, p99 %v (%d posts) while the disk was slow; 503s from the slow node: %d",
		fast99, slow50, slow99, n, n503)
	// A follower answers a forwarded write on the leader's result, so its
	// own disk need not show in its clients' latency (the fast follower
	// makes the quorum): only a slow leader must show.
	if leader && slow99 <= fast99 && n503 == 0 {
		t.Errorf("a slow leader's disk changed nothing clients see: p99 %v while slow, %v before, no 503", slow99, fast99)
	}
}
