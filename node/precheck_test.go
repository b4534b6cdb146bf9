package node_test

import (
	"context"
	"strings"
	"testing"

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
// them is appended to the raft log: the leader's commit index stays where
// the last admitted post left it. A replay of a stored post is answered as
// the state machine answers it: 200 while the source is under the limit,
// 429 once it is over (the limit is checked first, contract §2). Another
// source is not affected, and its post is logged.
func TestPostsOverTheLimitAreNotLogged(t *testing.T) {
	limit := restarea.Limit{Count: 3, WindowSeconds: 3600} // nothing leaves the window during the test
	nodes := testnode.StartCluster(t, 3, testnode.WithLimits(limit, restarea.Limit{Count: 1000, WindowSeconds: 3600}))
	leader := testnode.Leader(t, nodes)
	var follower *node.Node
	for _, n := range nodes {
		if n != leader {
			follower = n
			break
		}
	}
	testnode.WaitLogFormat(t, leader, 3)

	const src = "198.51.100.7"
	first := testkit.Question("first")
	if _, err := postFrom(follower, src, first); err != nil {
		t.Fatalf("first post: %v", err)
	}
	for i, want := range []bool{true, true} { // attempts 2 and 3: replays, under the limit
		res, err := postFrom(leader, src, first)
		if err != nil || res.Replayed != want {
			t.Fatalf("replay %d: %+v %v, want 200 replayed", i, res, err)
		}
	}
	before := commitIndex(t, leader)
	preBefore := counter(t, leader, "restarea_posts_refused_unlogged_total", nil)

	big := strings.Repeat("🦀", restarea.MaxBody) // 80 KB, as in the finding
	refused := 0
	for i := range 20 {
		n := follower
		if i%2 == 1 {
			n = leader
		}
		req := testkit.Question("over the limit")
		req.Body = big
		if i == 19 {
			req = first // a replay over the limit: 429 in the state machine too
		}
		_, err := postFrom(n, src, req)
		if restarea.ErrorCode(err) != restarea.CodeRateLimited {
			t.Fatalf("post %d through %s: %v, want 429 rate_limited", i, n.ID(), err)
		}
		msg := restarea.ErrorMessage(err)
		if !strings.Contains(msg, "limit 3 per 3600s") || restarea.RetryAfterSeconds(err) < 3500 {
			t.Fatalf("post %d: %q, Retry-After %ds; want the state machine's message and a delay of about an hour", i, msg, restarea.RetryAfterSeconds(err))
		}
		refused++
	}
	if after := commitIndex(t, leader); after != before {
		t.Fatalf("commit index %d → %d: refused posts were appended to the log", before, after)
	}
	if got := counter(t, leader, "restarea_posts_refused_unlogged_total", nil) - preBefore; got != float64(refused) {
		t.Fatalf("the leader counted %v posts refused before the log, want %d", got, refused)
	}
	for _, n := range []*node.Node{leader, follower} {
		if got := counter(t, n, "restarea_posts_total", map[string]string{"outcome": "rate_limited"}); got != float64(refused/2) {
			t.Fatalf("%s: restarea_posts_total{outcome=rate_limited} = %v, want %d", n.ID(), got, refused/2)
		}
	}

	// Another source is admitted, and its post is logged.
	if _, err := postFrom(follower, "198.51.100.8", first); err != nil {
		t.Fatalf("replay from another source: %v", err)
	}
	if after := commitIndex(t, leader); after <= before {
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
