package node_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/raftmetrics"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// scrape returns n's /metrics page.
func scrape(t *testing.T, n *node.Node) string {
	t.Helper()
	r := testkit.Get(t, n.URL()+"/metrics")
	if r.Status != http.StatusOK {
		t.Fatalf("/metrics: %d\n%s", r.Status, r.Body)
	}
	return r.Body
}

// After a three-node cluster has committed posts and snapshotted, the
// leader's /metrics carries raft's own metric families (commit time,
// replication to each follower by peer_id, the leader's contact with
// them, snapshot durations) next to the node's own, and the operator
// gauges the README's alerts use. Every raft family is under a name that
// follows Prometheus' conventions, and each old name still there points
// to its new one (checkRaftNames).
func TestRaftMetricsOnMetricsPage(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(func(c *server.Config) {
		c.SnapshotThreshold, c.SnapshotInterval, c.TrailingLogs = 16, 100*time.Millisecond, 4
	}))
	ctx := context.Background()
	meta := restarea.PostMeta{Source: "127.0.0.1", Channel: restarea.ChannelHTTP}
	for i := range 60 {
		// On a loaded machine leadership can move during the posts: a
		// client retries a 503 with the same request_id, through
		// whichever node leads now.
		req := testkit.Question("How do retries work?")
		testkit.Eventually(t, 30*time.Second, fmt.Sprintf("post %d through the leader", i), func() error {
			_, err := testnode.Leader(t, nodes).Post(ctx, req, meta)
			if err != nil && !restarea.ErrorCode(err).Retryable() {
				t.Fatalf("post %d: %v", i, err)
			}
			return err
		})
	}
	// want lists what the leader's page must carry.
	want := func(leader *node.Node) []string {
		w := []string{
			"# TYPE raft_commitTime summary",
			"# TYPE raft_commit_seconds summary",
			"# TYPE raft_leader_last_contact_seconds summary",
			"# TYPE raft_snapshot_persist_seconds summary",
			"# TYPE raft_state_leader_total counter",
			"# TYPE raft_leader_lastContact summary",
			"# TYPE raft_fsm_applyBatch summary",
			"# TYPE raft_snapshot_create summary",
			"# TYPE raft_snapshot_persist summary",
			"# TYPE raft_state_leader counter",
			`restarea_snapshots_total{outcome="persisted"} `,
			`restarea_snapshots_total{outcome="failed"} 0`,
			"restarea_data_dir_free_bytes ",
			"restarea_data_dir_size_bytes ",
			"\nrestarea_raft_last_contact_seconds 0\n",
		}
		for _, f := range nodes {
			if f != leader {
				w = append(w,
					fmt.Sprintf(`raft_replication_appendEntries_rpc_count{peer_id=%q}`, f.ID()),
					fmt.Sprintf(`raft_replication_heartbeat_count{peer_id=%q}`, f.ID()),
					fmt.Sprintf(`raft_replication_append_entries_rpc_seconds_count{peer_id=%q}`, f.ID()),
					fmt.Sprintf(`raft_replication_heartbeat_seconds_count{peer_id=%q}`, f.ID()),
					fmt.Sprintf(`raft_replication_append_entries_logs_total{peer_id=%q}`, f.ID()))
			}
		}
		return w
	}
	// lastContact is what n's page says of its last contact with a leader
	// (-1: not on the page).
	lastContact := func(n *node.Node) float64 {
		secs := -1.0
		for _, l := range strings.Split(scrape(t, n), "\n") {
			if v, ok := strings.CutPrefix(l, "restarea_raft_last_contact_seconds "); ok {
				fmt.Sscan(v, &secs)
			}
		}
		return secs
	}
	// Snapshots are taken by raft's own timer, and on a loaded machine
	// leadership may move: wait until the node leading at the time shows
	// every family, a persisted snapshot, and each follower reports a
	// heartbeat ago, well under a second.
	var missing, stale []string
	testkit.Poll(ctx, 60*time.Second, func() error {
		leader := testnode.Leader(t, nodes)
		page := scrape(t, leader)
		missing, stale = nil, nil
		for _, w := range want(leader) {
			if !strings.Contains(page, w) {
				missing = append(missing, w)
			}
		}
		if strings.Contains(page, `restarea_snapshots_total{outcome="persisted"} 0`) {
			missing = append(missing, "a persisted snapshot")
		}
		for _, f := range nodes {
			if secs := lastContact(f); f != leader && (secs <= 0 || secs > 1) {
				stale = append(stale, fmt.Sprintf("follower %s: last contact %v s ago", f.ID(), secs))
			}
		}
		if len(missing) > 0 || len(stale) > 0 || !leader.IsLeader() {
			return errors.New("not yet")
		}
		return nil
	})
	if len(missing) > 0 {
		t.Errorf("missing from the leader's /metrics: %q", missing)
	}
	for _, s := range stale {
		t.Error(s)
	}
	for _, n := range nodes {
		checkRaftNames(t, n.ID(), scrape(t, n))
	}
}

// checkRaftNames fails the test for a raft_ family of page that neither
// follows Prometheus' conventions nor is an old name whose help says
// "Deprecated: use <new name>; removed in the release after next." with
// the new name on the page too.
func checkRaftNames(t *testing.T, node, page string) {
	t.Helper()
	fams := testkit.MetricFamilies(page)
	renamed := 0
	for name, f := range fams {
		if !strings.HasPrefix(name, "raft_") {
			continue
		}
		rest, deprecated := strings.CutPrefix(f.Help, "Deprecated: use ")
		if !deprecated {
			if err := testkit.MetricConventions(name, f); err != nil {
				t.Errorf("node %s: %v", node, err)
			}
			continue
		}
		renamed++
		newName, tail, ok := strings.Cut(rest, "; ")
		if !ok || !strings.HasPrefix(tail, "removed in the release after next.") {
			t.Errorf("node %s: %s: deprecation %q does not say when it goes", node, name, f.Help)
		}
		if _, ok := fams[newName]; !ok {
			t.Errorf("node %s: %s is deprecated for %s, which is not on /metrics", node, name, newName)
		}
		if want, _, _ := raftmetrics.Rename(name); want != newName {
			t.Errorf("node %s: %s is deprecated for %s, the table says %s", node, name, newName, want)
		}
	}
	if renamed == 0 {
		t.Errorf("node %s: no deprecated raft names on /metrics", node)
	}
}
