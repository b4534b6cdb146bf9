package node_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// scrape returns n's /metrics page.
func scrape(t *testing.T, n *node.Node) string {
	t.Helper()
	resp, err := http.Get(n.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %v\n%s", resp.StatusCode, err, b)
	}
	return string(b)
}

// After a three-node cluster has committed posts and snapshotted, the
// leader's /metrics carries raft's own metric families (commit time,
// replication to each follower by peer_id, the leader's contact with
// them, snapshot durations) next to the node's own, and the operator
// gauges the README's alerts use.
func TestRaftMetricsOnMetricsPage(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(func(c *server.Config) {
		c.SnapshotThreshold, c.SnapshotInterval, c.TrailingLogs = 16, 100*time.Millisecond, 4
	}))
	leader := testnode.Leader(t, nodes)
	ctx := context.Background()
	meta := restarea.PostMeta{Source: "127.0.0.1", Channel: restarea.ChannelHTTP}
	for i := range 60 {
		if _, err := leader.Post(ctx, question(uuid.NewString()), meta); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	want := []string{
		"# TYPE raft_commitTime summary",
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
			want = append(want,
				fmt.Sprintf(`raft_replication_appendEntries_rpc_count{peer_id=%q}`, f.ID()),
				fmt.Sprintf(`raft_replication_heartbeat_count{peer_id=%q}`, f.ID()))
		}
	}
	// Snapshots are taken by raft's own timer: wait for them.
	var page string
	var missing []string
	for deadline := time.Now().Add(15 * time.Second); ; {
		page, missing = scrape(t, leader), nil
		for _, w := range want {
			if !strings.Contains(page, w) {
				missing = append(missing, w)
			}
		}
		persisted := !strings.Contains(page, `restarea_snapshots_total{outcome="persisted"} 0`)
		if (len(missing) == 0 && persisted) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(missing) > 0 {
		t.Errorf("missing from the leader's /metrics: %q", missing)
	}
	if strings.Contains(page, `restarea_snapshots_total{outcome="persisted"} 0`) {
		t.Errorf("no snapshot counted as persisted")
	}
	// A follower reports how long ago it heard from the leader: a
	// heartbeat ago, well under a second.
	for _, f := range nodes {
		if f == leader {
			continue
		}
		var secs float64
		for _, l := range strings.Split(scrape(t, f), "\n") {
			if v, ok := strings.CutPrefix(l, "restarea_raft_last_contact_seconds "); ok {
				fmt.Sscan(v, &secs)
			}
		}
		if secs <= 0 || secs > 1 {
			t.Errorf("follower %s: last contact %v s ago", f.ID(), secs)
		}
	}
}
