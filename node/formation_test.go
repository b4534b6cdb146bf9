package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// versionRaises counts the cluster version records of n's audit trail.
func versionRaises(t *testing.T, n *node.Node) int {
	t.Helper()
	page, err := n.ListAudit(context.Background(), restarea.ListOptions{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	c := 0
	for _, r := range page.Records {
		if r.Action == restarea.AuditClusterVersion {
			c++
		}
	}
	return c
}

// A node that starts a new cluster runs this release's newest cluster
// version from the start: find by body answers at once. Restarted, it
// raises nothing again.
func TestNewNodeFormsAtNewestClusterVersion(t *testing.T) {
	dir := t.TempDir()
	n := testnode.Start(t, testnode.WithDataDir(dir))
	testnode.WaitClusterVersion(t, fsm.ClusterVersionMax, n)
	testnode.WaitLogFormat(t, n, 3)
	body := strings.Repeat("A body longer than a search query may be. ", 30)
	q := testkit.Question("formed")
	q.Body = body
	res := testnode.Post(t, n, q)
	page, err := n.FindPosts(context.Background(), restarea.FindQuery{Body: body})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].ID != res.Entry.ID {
		t.Fatalf("find on a new cluster: %+v, %v", page, err)
	}
	if got := versionRaises(t, n); got != fsm.ClusterVersionMax-1 {
		t.Fatalf("%d cluster version records, want %d", got, fsm.ClusterVersionMax-1)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = testnode.Start(t, testnode.WithDataDir(dir))
	testnode.WaitReady(t, n)
	testnode.WaitClusterVersion(t, fsm.ClusterVersionMax, n)
	if got := versionRaises(t, n); got != fsm.ClusterVersionMax-1 {
		t.Fatalf("after a restart: %d cluster version records, want %d", got, fsm.ClusterVersionMax-1)
	}
}

// A cluster formed at an older cluster version — by v0.1.0, or with
// --initial-cluster-version — is raised only by finalize-upgrade: not when
// its leader restarts on a release that knows more, even before anything
// was posted.
func TestFormedClusterIsRaisedOnlyByFinalize(t *testing.T) {
	for _, initial := range []int{1, 2} {
		t.Run(fmt.Sprint(initial), func(t *testing.T) {
			dir := t.TempDir()
			formed := testnode.WithConfig(func(c *server.Config) { c.InitialClusterVersion = initial })
			n := testnode.Start(t, testnode.WithDataDir(dir), formed)
			testnode.WaitReady(t, n)
			testnode.WaitLogFormat(t, n, 3)
			testnode.WaitClusterVersion(t, initial, n)
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			n = testnode.Start(t, testnode.WithDataDir(dir))
			testnode.WaitReady(t, n)
			if _, err := n.Propose(context.Background(), &fsm.Command{Op: fsm.OpConfigure, Settings: &fsm.SettingsCommand{FromConfig: true}}); err != nil {
				t.Fatal(err) // a command after the new leader's own: it ran becameLeader
			}
			if st, err := n.ClusterStatus(context.Background()); err != nil || st.ClusterVersion != initial {
				t.Fatalf("restarted on this release: %+v, %v; want cluster version %d", st, err, initial)
			}
			res, err := n.FinalizeUpgrade(context.Background())
			if err != nil || res.From != initial || res.To != fsm.ClusterVersionMax {
				t.Fatalf("finalize: %+v, %v", res, err)
			}
		})
	}
}

// --initial-cluster-version must be one this binary knows.
func TestInitialClusterVersionValidated(t *testing.T) {
	for _, v := range []int{-1, fsm.ClusterVersionMax + 1} {
		cfg := testnode.Config(t, testnode.WithConfig(func(c *server.Config) { c.InitialClusterVersion = v }))
		n, err := server.Start(cfg)
		if err == nil {
			n.Close()
			t.Fatalf("initial cluster version %d: started", v)
		}
		if !strings.Contains(err.Error(), "initial cluster version") {
			t.Fatalf("initial cluster version %d: %v", v, err)
		}
	}
}
