package node_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// The scenario on the real stack: a byte of a stored question's
// body flips in state.db while the node is stopped, at cluster version 3.
// Restarted, the node answers a read of it, and a replay of the original
// post, with an error — never the changed text, never a 409 — and stops,
// naming the state file and the record.
func TestRotInStateFileStopsTheNode(t *testing.T) {
	dir := t.TempDir()
	n := testnode.Start(t, testnode.WithDataDir(dir))
	// The scrub's first pass runs as the node starts.
	testkit.Eventually(t, 20*time.Second, "a scrub pass", func() error {
		if got := counter(t, n, "restarea_scrub_passes_total", nil); got < 1 {
			return fmt.Errorf("restarea_scrub_passes_total = %v", got)
		}
		return nil
	})
	if res, err := n.FinalizeUpgrade(context.Background()); err != nil || res.Status.ClusterVersion != fsm.ClusterVersionMax {
		t.Fatalf("finalize: %+v, %v", res, err)
	}
	req := testkit.Question("A question whose body rots on disk")
	req.Body = "The original text of the question."
	r, e, _ := testkit.PostEntry(t, n.URL(), req)
	if r.Status != http.StatusCreated {
		t.Fatalf("post: %d %s", r.Status, r.Body)
	}
	// Indexed before the stop, so that the search index, which reads
	// new entries from the state, has no reason to read it again.
	testkit.Eventually(t, 20*time.Second, "the question in the search index", func() error {
		if r := testkit.Get(t, n.URL()+"/api/v1/search?q=rots"); !strings.Contains(r.Body, e.ID) {
			return fmt.Errorf("search: %d %s", r.Status, r.Body)
		}
		return nil
	})
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.Rot(t, filepath.Join(dir, "state.db"), []byte("original text"), 0) // "nriginal text"

	stopped := func(m *node.Node) *fsm.CorruptError {
		t.Helper()
		select {
		case <-m.Done():
		case <-time.After(time.Minute):
			t.Fatal("the node did not stop")
		}
		var c *fsm.CorruptError
		if err := m.Halted(); !errors.As(err, &c) || c.File != "state.db" || !strings.HasPrefix(c.Where, "entries/") {
			t.Fatalf("Halted() = %v, want a CorruptError in state.db, entries/…", err)
		}
		if got := counter(t, m, "restarea_corruption_detected_total", map[string]string{"file": "state.db"}); got != 1 {
			t.Fatalf("restarea_corruption_detected_total{file=\"state.db\"} = %v, want 1", got)
		}
		return c
	}

	// Without the scrub, which would find the damage first (below).
	noScrub := testnode.WithConfig(func(c *server.Config) { c.ScrubRate = -1 })
	t.Run("read", func(t *testing.T) {
		m := testnode.Start(t, testnode.WithDataDir(dir), noScrub)
		got := testkit.Get(t, m.URL()+"/api/v1/threads/"+e.ID)
		if got.Status != http.StatusServiceUnavailable || strings.Contains(got.Body, "nriginal") {
			t.Fatalf("GET the rotten question: %d %s, want 503 without the text", got.Status, got.Body)
		}
		stopped(m)
	})
	t.Run("replay", func(t *testing.T) {
		m := testnode.Start(t, testnode.WithDataDir(dir), noScrub)
		got, _, code := testkit.PostEntry(t, m.URL(), req)
		if got.Status != http.StatusServiceUnavailable || strings.Contains(got.Body, "nriginal") {
			t.Fatalf("replay of the rotten question: %d %s (%s), want 503 without the text", got.Status, got.Body, code)
		}
		if c := stopped(m); c.Index == 0 {
			t.Fatalf("the replay's halt %+v names no log index", c)
		}
	})
	t.Run("scrub", func(t *testing.T) {
		m, err := server.Start(testnode.Config(t, testnode.WithDataDir(dir)))
		if err != nil {
			t.Fatalf("start: %v", err) // the scrub runs once the node has started
		}
		defer m.Close()
		stopped(m)
	})
}
