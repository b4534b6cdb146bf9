package node_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
	"github.com/restarea/restarea/transport"
)

// A majority lost for good under load, as docs/disasters.md tells it:
// clients post through every node while the leader and the others but one
// follower are killed at once and their data deleted. The follower that
// survives was cut off a little before, so that some acknowledged posts
// were committed only on the machines that burn. The survivor is
// recovered, wiped nodes join it back to full size, and the checker sorts
// every acknowledged post: held by the survivor, and then on every node
// exactly once, or lost with the majority (committed only on the machines
// that burned), which it lists. Then the lost machines come back with
// their data, and each is refused and stops.
func TestRecoverUnderLoad(t *testing.T) {
	for _, size := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d nodes", size), func(t *testing.T) { recoverUnderLoad(t, size) })
	}
}

func recoverUnderLoad(t *testing.T, size int) {
	var faults []*transport.Faults // in the order StartCluster starts the nodes
	nodes := testnode.StartCluster(t, size, testnode.WithConfig(func(c *server.Config) {
		c.Faults = &transport.Faults{}
		faults = append(faults, c.Faults)
	}))
	leader := testnode.Leader(t, nodes)
	var survivor *node.Node
	var cut *transport.Faults
	for i, n := range nodes {
		if n != leader {
			survivor, cut = n, faults[i]
			break
		}
	}
	var countAcked func() int

	// The load: one client per node, each post acknowledged or not.
	var mu sync.Mutex
	acked := map[string]string{} // entry id → title
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for c, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				title := fmt.Sprintf("client %d post %d", c, i)
				pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				res, err := n.Post(pctx, testkit.Question(title), testnode.Meta)
				cancel()
				if err == nil {
					mu.Lock()
					acked[res.Entry.ID] = title
					mu.Unlock()
				}
			}
		}()
	}
	countAcked = func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	atLeast := func(want int) {
		testkit.Eventually(t, 60*time.Second, fmt.Sprintf("%d acknowledged posts", want), func() error {
			if n := countAcked(); n < want {
				return fmt.Errorf("%d acknowledged", n)
			}
			return nil
		})
	}
	atLeast(100)
	mu.Lock()
	before := make([]string, 0, len(acked))
	for id := range acked {
		before = append(before, id)
	}
	mu.Unlock()
	testkit.Eventually(t, 60*time.Second, "the survivor to hold the first 100 acknowledged posts", func() error {
		got := entryIDs(t, survivor)
		for _, id := range before {
			if got[id] != 1 {
				return fmt.Errorf("%s not held", id)
			}
		}
		return nil
	})
	// The survivor falls behind: what is acknowledged from here on is
	// committed on the others only.
	cut.Isolate()
	atLeast(countAcked() + 30)

	// The fire: every node but the survivor, the leader among them, at
	// once, while the clients post.
	type lostMachine struct{ id, raftAddr, dir string }
	var lost []lostMachine
	for _, n := range nodes {
		if n != survivor {
			lost = append(lost, lostMachine{id: n.ID(), raftAddr: n.RaftAddr(), dir: n.DataDir()})
			go n.Kill()
		}
	}
	for _, n := range nodes {
		if n != survivor {
			<-n.Done()
		}
	}
	stop()
	wg.Wait()
	survivorAddr := survivor.RaftAddr()
	survivor.Kill()
	<-survivor.Done()
	// Their disks, as they will come back; then the machines are gone.
	for i, m := range lost {
		keep := filepath.Join(t.TempDir(), "lost")
		if err := os.CopyFS(keep, os.DirFS(m.dir)); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(m.dir); err != nil {
			t.Fatal(err)
		}
		lost[i].dir = keep
	}

	if _, err := node.Recover(survivor.DataDir(), node.RecoverOptions{}); err != nil {
		t.Fatal(err)
	}
	recovered := startRecovered(t, survivor.DataDir(), survivorAddr, size)
	first := recovered[0]

	// The checker.
	held := entryIDs(t, first)
	var kept, lostPosts []string
	for id, title := range acked {
		if held[id] == 1 {
			kept = append(kept, id)
		} else {
			lostPosts = append(lostPosts, title+" ("+id+")")
		}
	}
	sort.Strings(lostPosts)
	t.Logf("%d acknowledged posts: %d held by the survivor, %d lost with the majority (a journaling client posts them again with the same request_id): %v",
		len(acked), len(kept), len(lostPosts), lostPosts)
	for _, id := range before {
		if held[id] != 1 {
			t.Fatalf("acknowledged post %s, held by the survivor before the cut, is lost", id)
		}
	}
	// Each client had at most one post in flight at the cut, which the
	// survivor may have received before it.
	if len(lostPosts) < 30-size {
		t.Fatalf("%d acknowledged posts lost; want the 30 acknowledged after the cut but for the %d in flight", len(lostPosts), size)
	}
	for _, n := range recovered {
		testkit.Eventually(t, 60*time.Second, "node "+n.ID()+" to hold every post the survivor held, once", func() error {
			got := entryIDs(t, n)
			for id, c := range got {
				if c != 1 {
					return fmt.Errorf("entry %s held %d times", id, c)
				}
			}
			for _, id := range kept {
				if got[id] != 1 {
					return fmt.Errorf("acknowledged entry %s missing", id)
				}
			}
			if len(got) != len(held) {
				return fmt.Errorf("%d entries; the survivor held %d", len(got), len(held))
			}
			return nil
		})
	}

	// The lost machines come back with their data, all at once, started
	// as the recipes start every node: with --join naming the others.
	var urls []string
	for _, n := range recovered {
		urls = append(urls, n.URL())
	}
	var back []*node.Node
	for _, m := range lost {
		n, err := server.Start(testnode.Config(t, withSecret, testnode.WithDataDir(m.dir), testnode.WithConfig(func(c *server.Config) {
			c.RaftAddr, c.NodeID, c.JoinURLs = m.raftAddr, m.id, urls
		})))
		if err != nil {
			t.Fatalf("restart of lost machine %s: %v", m.id, err)
		}
		t.Cleanup(func() { n.Close() })
		back = append(back, n)
	}
	for _, n := range back {
		select {
		case <-n.Done():
		case <-time.After(2 * time.Minute):
			t.Fatalf("lost machine %s came back and did not stop", n.ID())
		}
		if err := n.Halted(); !errors.Is(err, node.ErrStale) {
			t.Fatalf("lost machine %s stopped with %v; want ErrStale", n.ID(), err)
		}
	}
	// None of them became a member: a voter that cannot be reached would
	// still count in the quorum.
	testnode.WaitMembers(t, recovered, size)
	res := testnode.Post(t, recovered[size-1], testkit.Question("after the lost machines came back"))
	for _, n := range recovered {
		testkit.Eventually(t, 30*time.Second, "the post after on "+n.ID(), func() error {
			if entryIDs(t, n)[res.Entry.ID] != 1 {
				return errors.New("not yet")
			}
			return nil
		})
	}
}

// entryIDs counts the entries n holds, by id, paging through them all.
func entryIDs(t *testing.T, n *node.Node) map[string]int {
	t.Helper()
	got := map[string]int{}
	opts := restarea.ListOptions{Limit: restarea.MaxPageLimit}
	for {
		page, err := n.ListEntries(context.Background(), opts)
		if err != nil {
			t.Fatalf("list entries on %s: %v", n.ID(), err)
		}
		for _, e := range page.Entries {
			got[e.ID]++
		}
		if page.NextCursor == nil {
			return got
		}
		opts.Cursor = *page.NextCursor
	}
}
