package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// A follower answers a forwarded post as soon as the leader's result
// arrives, before it has applied the entry itself (that waits for the
// leader's next append). A read on that follower right after the answer
// must still see the post: reads wait for the index the node
// acknowledged. Without that wait these reads miss the post nearly every
// time, since the read follows the answer within microseconds.
func TestFollowerReadsItsOwnWritesAtOnce(t *testing.T) {
	nodes := testnode.StartCluster(t, 3)
	leader := testnode.Leader(t, nodes)
	f := others(nodes, leader)[0]
	ctx := context.Background()
	for i := range 30 {
		q := testnode.Post(t, f, testkit.Question("read back at once"))
		if _, err := f.GetThread(ctx, q.Entry.ID, restarea.ReadOptions{}); err != nil {
			t.Fatalf("post %d: reading the question back on the follower that answered it: %v", i, err)
		}
		r := testnode.Post(t, f, testkit.Reply(q.Entry.ID, "a reply"))
		page, err := f.ListReplies(ctx, q.Entry.ID, restarea.ListOptions{})
		if err != nil || len(page.Replies) != 1 || page.Replies[0].ID != r.Entry.ID {
			t.Fatalf("post %d: listing the reply back on the follower that answered it: %+v, %v", i, page.Replies, err)
		}
	}
}

// A node restarted right after it answered a write cannot know, from its
// own state, what its previous process acknowledged: its first read waits
// for an index the leader confirms.
func TestRestartedFollowerReadsWritesItAcknowledged(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(fastFailover))
	leader := testnode.Leader(t, nodes)
	f := others(nodes, leader)[0]
	var ids []string
	for range 5 {
		ids = append(ids, testnode.Post(t, f, testkit.Question("acknowledged, then the node crashed")).Entry.ID)
	}
	dir := f.DataDir()
	f.Kill()
	// Not testnode.StartConfig, which waits until the node is ready: the
	// reads must come before it has caught up.
	r, err := server.Start(testnode.Config(t, testnode.WithDataDir(dir), testnode.WithConfig(func(c *server.Config) {
		fastFailover(c)
		c.ClusterSecret = testnode.Secret
		c.JoinURLs = []string{leader.URL()}
	})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	for _, id := range ids {
		// 503 while it cannot reach the leader: retried; anything else fails.
		testkit.Eventually(t, 30*time.Second, "the restarted follower to read "+id, func() error {
			_, err := r.GetThread(context.Background(), id, restarea.ReadOptions{})
			if err != nil && restarea.ErrorCode(err) != restarea.CodeUnavailable {
				t.Fatalf("restarted follower: reading %s it acknowledged before the crash: %v", id, err)
			}
			return err
		})
	}
}
