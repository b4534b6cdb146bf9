package client_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/client"
	"github.com/restarea/restarea/node"
)

// newClient returns a client with a fresh journal, fast backoff and a
// generous deadline, talking to servers.
func newClient(t *testing.T, servers []string, change ...func(*client.Options)) (*client.Client, *client.Journal) {
	t.Helper()
	j, err := client.OpenJournal(filepath.Join(t.TempDir(), "state", "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	opts := client.Options{
		Servers:        servers,
		Journal:        j,
		MaxAttempts:    8,
		Deadline:       30 * time.Second,
		AttemptTimeout: 5 * time.Second,
		BaseBackoff:    5 * time.Millisecond,
		MaxBackoff:     40 * time.Millisecond,
	}
	for _, f := range change {
		f(&opts)
	}
	c, err := client.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c, j
}

// seed stores req directly through the node's service.
func seed(t *testing.T, n *node.Node, req restarea.PostRequest) restarea.Entry {
	t.Helper()
	res, err := n.Post(context.Background(), req, restarea.PostMeta{Source: "127.0.0.2", Channel: restarea.ChannelHTTP})
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	return res.Entry
}

// stored counts the entries the node holds (hidden ones included) with
// the given request_id, by paging the operators' list.
func stored(t *testing.T, n *node.Node, requestID string) int {
	t.Helper()
	count := 0
	opts := restarea.ListOptions{Limit: restarea.MaxPageLimit, Consistency: restarea.ConsistencyStrong}
	for range 10000 {
		page, err := n.ListEntries(context.Background(), opts)
		if err != nil {
			t.Fatalf("list entries: %v", err)
		}
		for _, e := range page.Entries {
			if e.RequestID == requestID {
				count++
			}
		}
		if page.NextCursor == nil {
			return count
		}
		opts.Cursor = *page.NextCursor
	}
	t.Fatal("list entries did not end")
	return 0
}

func pending(t *testing.T, j *client.Journal) []client.PendingPost {
	t.Helper()
	p, err := j.Pending()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
