package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/server"
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
		q := postRetry(t, f, question("read back at once"))
		if _, err := f.GetThread(ctx, q.Entry.ID, restarea.ReadOptions{}); err != nil {
			t.Fatalf("post %d: reading the question back on the follower that answered it: %v", i, err)
		}
		r := postRetry(t, f, restarea.PostRequest{RequestID: uuid.NewString(), Type: restarea.TypeReply, ParentID: q.Entry.ID,
			Body: "a reply", Actor: restarea.Actor{Name: "tester"}, SubmissionMode: restarea.ModeAutonomous})
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
		ids = append(ids, postRetry(t, f, question("acknowledged, then the node crashed")).Entry.ID)
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, id := range ids {
		for {
			_, err := r.GetThread(ctx, id, restarea.ReadOptions{})
			if err == nil {
				break
			}
			if restarea.ErrorCode(err) != restarea.CodeUnavailable || ctx.Err() != nil {
				t.Fatalf("restarted follower: reading %s it acknowledged before the crash: %v", id, err)
			}
			time.Sleep(20 * time.Millisecond) // 503 while it cannot reach the leader: retry
		}
	}
}
