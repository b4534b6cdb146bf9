package node_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea/node"
	"github.com/restarea/restarea/node/nodetest"
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
		o := []nodetest.Option{nodetest.WithConfig(func(c *node.Config) {
			c.ClusterSecret = nodetest.Secret
			c.LeaderWait = 3 * time.Second
			c.ApplyTimeout = 5 * time.Second
			c.DiskHooks = d.hooks()
			if i > 0 {
				c.JoinURLs = []string{nodes[0].URL()}
			}
		})}
		nodes = append(nodes, nodetest.StartConfig(t, nodetest.Config(t, o...)))
		disks = append(disks, d)
	}
	nodetest.WaitMembers(t, nodes, 3)
	return nodes, disks
}

// TestSlowDiskFollower slows one follower's disk under load: the posts it
// answers take longer (it answers only once it applied them), the others'
// do not, and no acknowledged post is lost or stored twice.
func TestSlowDiskFollower(t *testing.T) {
	nodes, disks := slowCluster(t)
	for i, n := range nodes {
		if !n.IsLeader() {
			testSlowDisk(t, nodes, n, disks[i])
			return
		}
	}
}

// TestSlowDiskLeader slows the leader's disk under load: every write
// takes longer (or answers 503 past the apply timeout), none is lost or
// stored twice. Raft does not replace a leader whose disk is merely slow:
// its heartbeats do not touch the disk, so the followers never time it
// out; the test reports whether leadership moved.
func TestSlowDiskLeader(t *testing.T) {
	nodes, disks := slowCluster(t)
	for i, n := range nodes {
		if n.IsLeader() {
			testSlowDisk(t, nodes, n, disks[i])
			return
		}
	}
	t.Fatal("no leader")
}

func testSlowDisk(t *testing.T, nodes []*node.Node, slow *node.Node, disk *slowDisk) {
	wasLeader := slow.IsLeader()
	load := newFaultLoad(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	load.setPhase("1-fast")
	wg := load.run(ctx, nodes, 6)
	defer wg.Wait()
	time.Sleep(2 * time.Second)

	disk.on.Store(true)
	load.setPhase("2-slow")
	slowAt := time.Now()
	leaderChanges := 0
	lastLeader := slow.IsLeader()
	for time.Since(slowAt) < 5*time.Second {
		if l := slow.IsLeader(); l != lastLeader {
			leaderChanges++
			lastLeader = l
		}
		time.Sleep(10 * time.Millisecond)
	}
	stillLeader := slow.IsLeader()
	disk.on.Store(false)
	load.setPhase("3-healed")
	time.Sleep(2 * time.Second)
	cancel()
	wg.Wait()

	load.resolve(nodes)
	load.verify(nodes)
	load.report()
	t.Logf("%d disk operations delayed on %s (leader: %v); leadership changes on it while slow: %d, still leader at the end: %v",
		disk.delayed.Load(), slow.ID(), wasLeader, leaderChanges, stillLeader)
	if disk.delayed.Load() == 0 {
		t.Fatal("the slow disk delayed nothing")
	}
	fast50, _, _ := load.latency("1-fast")
	slow50, slow99, n := load.latency("2-slow")
	t.Logf("acknowledged latency p50 %v before, %v (p99 %v, %d posts) while the disk was slow; 503s from the slow node: %d",
		fast50, slow50, slow99, n, load.counts(slow, http.StatusServiceUnavailable))
	if slow99 <= fast50 && load.counts(slow, http.StatusServiceUnavailable) == 0 {
		t.Errorf("a slow disk changed nothing clients see: p99 %v while slow, p50 %v before, no 503", slow99, fast50)
	}
}
