package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// counter is the value of a counter family on n's registry, summed over
// the series whose labels include want.
func counter(t *testing.T, n *node.Node, name string, want map[string]string) float64 {
	t.Helper()
	fams, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for k, v := range want {
				found := false
				for _, l := range m.GetLabel() {
					if l.GetName() == k && l.GetValue() == v {
						found = true
					}
				}
				if !found {
					continue series
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// commitIndex is n's raft commit index.
func commitIndex(t *testing.T, n *node.Node) uint64 {
	t.Helper()
	st, err := n.ClusterStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.CommitIndex
}

// postFrom posts req through n from source.
func postFrom(n *node.Node, source string, req restarea.PostRequest) (restarea.PostResult, error) {
	return n.Post(context.Background(), req, restarea.PostMeta{Source: source, Channel: restarea.ChannelHTTP})
}

// Posts over the per-source limit, sent to a follower and to the leader,
// are answered 429 with the state machine's message and delay, and none of
// them is appended to the raft log of any node. A replay of a stored post
// is answered as the state machine answers it: 200 while the source is
// under the limit, 429 once it is over (the limit is checked first,
// contract §2). Another source is not affected, and its post is logged;
// once the operators raise the limit, the source is admitted at once.
func TestPostsOverTheLimitAreNotLogged(t *testing.T) {
	limit := restarea.Limit{Count: 5, WindowSeconds: 3600} // nothing leaves the window during the test
	nodes := testnode.StartCluster(t, 3, testnode.WithLimits(limit, restarea.Limit{Count: 1000, WindowSeconds: 3600}))
	leader := testnode.Leader(t, nodes)
	testnode.WaitLogFormat(t, leader, 3)
	var follower *node.Node
	for _, n := range nodes {
		if n != leader {
			follower = n
			break
		}
	}

	const src = "198.51.100.7"
	first := testkit.Question("first")
	if _, err := postFrom(follower, src, first); err != nil {
		t.Fatalf("first post: %v", err)
	}
	if res, err := postFrom(leader, src, first); err != nil || !res.Replayed {
		t.Fatalf("replay under the limit: %+v %v, want 200 replayed", res, err)
	}
	// Replays fill the window (a node's internal resend of a post whose
	// outcome it did not learn counts as an attempt too, so the number
	// is not fixed); the first 429 shows it is full.
	full := false
	for i := 0; i < limit.Count && !full; i++ {
		res, err := postFrom(leader, src, first)
		switch {
		case restarea.ErrorCode(err) == restarea.CodeRateLimited:
			full = true
		case err != nil || !res.Replayed:
			t.Fatalf("replay %d: %+v %v, want 200 replayed or 429", i, res, err)
		}
	}
	if !full {
		t.Fatalf("%d attempts from one source under a limit of %d were all admitted", limit.Count+2, limit.Count)
	}

	// Each node's log from here on: no post may be appended (a new
	// leader's own entries, after an election on a loaded machine, may).
	leader = testnode.Leader(t, nodes)
	before := commitIndex(t, leader)
	lastBefore := map[*node.Node]uint64{}
	unloggedBefore, limitedBefore := 0.0, map[*node.Node]float64{}
	for _, n := range nodes {
		lastBefore[n] = testkit.EventuallyValue(t, 20*time.Second, n.ID()+" to hold the admitted posts", func() (uint64, error) {
			i, err := n.LastLogIndex()
			if err == nil && i < before {
				err = fmt.Errorf("last index %d, leader committed %d", i, before)
			}
			return i, err
		})
		unloggedBefore += counter(t, n, "restarea_posts_refused_unlogged_total", nil)
		limitedBefore[n] = counter(t, n, "restarea_posts_total", map[string]string{"outcome": "rate_limited"})
	}

	big := strings.Repeat("🦀", restarea.MaxBody) // 80 KB, as in the finding
	const attack = 20
	sent := map[*node.Node]float64{}
	for i := range attack {
		n := nodes[i%len(nodes)] // followers and the leader
		req := testkit.Question("over the limit")
		req.Body = big
		if i == attack-1 {
			req = first // a replay over the limit: 429 in the state machine too
		}
		_, err := postFrom(n, src, req)
		if restarea.ErrorCode(err) != restarea.CodeRateLimited {
			t.Fatalf("post %d through %s: %v, want 429 rate_limited", i, n.ID(), err)
		}
		msg := restarea.ErrorMessage(err)
		if !strings.Contains(msg, "limit 5 per 3600s") || restarea.RetryAfterSeconds(err) < 3500 {
			t.Fatalf("post %d: %q, Retry-After %ds; want the state machine's message and a delay of about an hour", i, msg, restarea.RetryAfterSeconds(err))
		}
		sent[n]++
	}
	unlogged := -unloggedBefore
	for _, n := range nodes {
		if posts, err := n.LoggedPosts(lastBefore[n]); err != nil || posts != 0 {
			t.Fatalf("%s: %d posts appended to the log after index %d (%v): refused posts were logged", n.ID(), posts, lastBefore[n], err)
		}
		if got := counter(t, n, "restarea_posts_total", map[string]string{"outcome": "rate_limited"}) - limitedBefore[n]; got != sent[n] {
			t.Fatalf("%s: restarea_posts_total{outcome=rate_limited} grew by %v, want %v", n.ID(), got, sent[n])
		}
		unlogged += counter(t, n, "restarea_posts_refused_unlogged_total", nil)
	}
	if unlogged < attack { // more when a follower resent a forward whose answer it lost
		t.Fatalf("restarea_posts_refused_unlogged_total grew by %v over the nodes, want at least %d", unlogged, attack)
	}

	// Another source is admitted, and its post is logged.
	if _, err := postFrom(follower, "198.51.100.8", first); err != nil {
		t.Fatalf("replay from another source: %v", err)
	}
	if after := commitIndex(t, testnode.Leader(t, nodes)); after <= before {
		t.Fatalf("commit index %d → %d: an admitted post was not logged", before, after)
	}

	// Once the operators raise the limit (through one follower), the
	// source's next post through any node is admitted at once: the
	// leader's state holds the acknowledged change before it refuses.
	raised := restarea.Limit{Count: 100, WindowSeconds: 3600}
	if _, err := follower.UpdateSettings(context.Background(), restarea.SettingsPatch{PerSourceLimit: &raised}); err != nil {
		t.Fatalf("raise the limit: %v", err)
	}
	for _, n := range nodes {
		if _, err := postFrom(n, src, testkit.Question("after the limit was raised")); err != nil {
			t.Fatalf("post through %s after the limit was raised: %v", n.ID(), err)
		}
	}
}

// Operator posts are not subject to the per-source limit and are never
// refused before the log.
func TestOperatorPostsAreNotPreChecked(t *testing.T) {
	one := restarea.Limit{Count: 1, WindowSeconds: 3600}
	n := testnode.Start(t, testnode.WithLimits(one, restarea.Limit{Count: 1000, WindowSeconds: 3600}))
	meta := restarea.PostMeta{Source: "198.51.100.9", Channel: restarea.ChannelHTTP}
	for i := range 3 {
		if _, err := n.OperatorPost(context.Background(), testkit.Question("by the operators"), meta); err != nil {
			t.Fatalf("operator post %d: %v", i, err)
		}
	}
	if got := counter(t, n, "restarea_posts_refused_unlogged_total", nil); got != 0 {
		t.Fatalf("%v operator posts refused before the log", got)
	}
}
