package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// A node cut off from its quorum takes no writes (/readyz 503) but keeps
// answering reads from its own state: /readyz/read is 200, and a stale
// read answers at once, over the service and over REST.
func TestStaleReadsWithoutAQuorum(t *testing.T) {
	nodes := testnode.StartCluster(t, 3)
	q := testnode.Post(t, nodes[0], testkit.Question("read me while alone"))
	survivor := nodes[2]
	testkit.Eventually(t, 30*time.Second, "the survivor to hold the post", func() error {
		_, err := survivor.GetThread(context.Background(), q.Entry.ID, restarea.ReadOptions{})
		return err
	})
	nodes[0].Close()
	nodes[1].Close()
	testkit.Eventually(t, 30*time.Second, "the survivor to know it has no leader", func() error {
		if survivor.Ready() == nil {
			return errStillReady
		}
		return nil
	})
	if err := survivor.ReadyForReads(); err != nil {
		t.Fatalf("ReadyForReads without a quorum: %v", err)
	}
	start := time.Now()
	page, err := survivor.ListThreads(context.Background(), restarea.ListOptions{Consistency: restarea.ConsistencyStale})
	if err != nil || len(page.Threads) != 1 || page.Threads[0].ID != q.Entry.ID {
		t.Fatalf("stale list without a quorum: %+v %v", page, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the stale read waited %v", d) // a bound, not a timing: it waits for nothing
	}
	for path, want := range map[string]int{
		"/readyz":      http.StatusServiceUnavailable,
		"/readyz/read": http.StatusOK,
		"/api/v1/threads/" + q.Entry.ID + "?consistency=stale": http.StatusOK,
	} {
		resp, err := http.Get(survivor.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s without a quorum: %d %v, want %d", path, resp.StatusCode, body, want)
		}
	}
	// A strong read needs the leader: it waits as long as its request may.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := survivor.ListThreads(ctx, restarea.ListOptions{Consistency: restarea.ConsistencyStrong}); err == nil {
		t.Error("a strong read answered without a quorum")
	}
}

var errStillReady = restarea.Errorf(restarea.CodeUnavailable, "still ready for writes")
