package cluster_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/cluster"
	"github.com/restarea/restarea/internal/decode"
	"github.com/restarea/restarea/internal/httpx"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// playRelease makes a node announce a release and the newest cluster
// version it knows, as --test-cluster-version-max does.
func playRelease(version string, max int) testnode.Option {
	return testnode.WithConfig(func(c *server.Config) { c.Version, c.ClusterVersionMax = version, max })
}

// versionCluster starts one node per release (index 0 bootstraps), each
// with its own data directory and a fixed raft address, so that a member
// can be restarted on another release as an operator upgrades it.
type versionCluster struct {
	t     *testing.T
	nodes []*node.Node
	dirs  []string
	addrs []string
	opts  []testnode.Option
}

func startVersionCluster(t *testing.T, releases []testnode.Option, opts ...testnode.Option) *versionCluster {
	c := &versionCluster{t: t, opts: opts}
	for i, r := range releases {
		c.dirs = append(c.dirs, t.TempDir())
		c.addrs = append(c.addrs, testkit.FreeAddr(t))
		c.nodes = append(c.nodes, nil)
		c.start(i, r)
	}
	testnode.WaitMembers(t, c.nodes, len(releases))
	return c
}

// start (re)starts member i on release r.
func (c *versionCluster) start(i int, r testnode.Option) {
	t := c.t
	t.Helper()
	opts := append([]testnode.Option{testnode.WithConfig(fastFailover), testnode.WithDataDir(c.dirs[i]), testnode.FormedByV010(),
		testnode.WithConfig(func(cfg *server.Config) {
			cfg.ClusterSecret, cfg.RaftAddr = testnode.Secret, c.addrs[i]
			if i > 0 {
				cfg.JoinURLs = []string{c.nodes[0].URL()}
			}
		})}, c.opts...)
	opts = append(opts, r)
	if i == 0 {
		// Restarted, it has its state and needs no join.
		c.nodes[0] = testnode.Start(t, opts...)
		return
	}
	n, err := server.Start(testnode.Config(t, opts...))
	if err != nil {
		t.Fatalf("start member %d: %v", i, err)
	}
	t.Cleanup(func() { n.Close() })
	c.nodes[i] = n
}

// upgrade stops member i and starts it again on release r.
func (c *versionCluster) upgrade(i int, r testnode.Option) {
	c.t.Helper()
	if err := c.nodes[i].Close(); err != nil {
		c.t.Fatal(err)
	}
	c.start(i, r)
	testnode.WaitMembers(c.t, c.nodes, len(c.nodes))
}

// Finalizing is refused, naming the member, while one runs a release that
// does not know the next cluster version; once it is upgraded, finalizing
// through a follower raises the version one step per command to the
// newest every member knows, which the status and the audit trail show; a
// second finalize changes nothing; and from then on a node that does not
// know the version is refused when it joins.
func TestFinalizeUpgrade(t *testing.T) {
	next, cur, prev := playRelease("v0.3.0-test", 3), playRelease("v0.2.0-test", 2), playRelease("v0.1.9-test", 1)
	c := startVersionCluster(t, []testnode.Option{next, next, prev})
	ctx := context.Background()
	leader := testnode.Leader(t, c.nodes)

	// The status shows each member's release and what it knows.
	testkit.Eventually(t, 20*time.Second, "the status to show every member's release", func() error {
		st, err := leader.ClusterStatus(ctx)
		if err != nil {
			return err
		}
		if st.ClusterVersion != 1 || st.ClusterVersionMax != 3 {
			return fmt.Errorf("cluster version %d, max %d", st.ClusterVersion, st.ClusterVersionMax)
		}
		for _, m := range st.Members {
			want, wantMax := "v0.3.0-test", 3
			if m.ID == c.nodes[2].ID() {
				want, wantMax = "v0.1.9-test", 1
			}
			if m.Version != want || m.ClusterVersionMax != wantMax {
				return fmt.Errorf("member %s: %q max %d", m.ID, m.Version, m.ClusterVersionMax)
			}
		}
		return nil
	})

	_, err := c.nodes[1].FinalizeUpgrade(ctx)
	if restarea.ErrorCode(err) != restarea.CodeConflict {
		t.Fatalf("finalize with a member behind: %v, want conflict", err)
	}
	want := c.nodes[2].ID() + " runs v0.1.9-test (cluster version ≤ 1): upgrade it first"
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("refusal %q does not say %q", err, want)
	}
	testnode.WaitClusterVersion(t, 1, c.nodes...)

	// Upgrading the member to the current release: the newest all know is 2.
	c.upgrade(2, cur)
	res, err := c.nodes[2].FinalizeUpgrade(ctx)
	if err != nil || !res.Changed || res.From != 1 || res.To != 2 || res.Status.ClusterVersion != 2 {
		t.Fatalf("finalize with every member on a newer release: %+v, %v", res, err)
	}
	testnode.WaitClusterVersion(t, 2, c.nodes...)
	// And to the next one: the rest of the way.
	c.upgrade(2, next)
	res, err = c.nodes[1].FinalizeUpgrade(ctx)
	if err != nil || res.From != 2 || res.To != 3 || res.Status.ClusterVersion != 3 || res.Status.ClusterVersionMax != 3 {
		t.Fatalf("second finalize: %+v, %v", res, err)
	}
	testnode.WaitClusterVersion(t, 3, c.nodes...)
	res, err = c.nodes[0].FinalizeUpgrade(ctx)
	if err != nil || res.Changed || res.From != 3 || res.To != 3 || !strings.Contains(res.Message, "nothing to finalize") {
		t.Fatalf("finalize at the newest version: %+v, %v", res, err)
	}

	// Each raise is an audited operator action, on every node.
	testnode.WaitLogFormat(t, c.nodes[2], 3)
	page, err := c.nodes[2].ListAudit(ctx, restarea.ListOptions{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var raises []string
	for _, r := range page.Records {
		if r.Action == restarea.AuditClusterVersion {
			raises = append(raises, string(r.Changes[0].Before)+"→"+string(r.Changes[0].After))
		}
	}
	if strings.Join(raises, ",") != "2→3,1→2" {
		t.Fatalf("audited raises %v, want 2→3 and 1→2", raises)
	}

	// A joiner that does not know cluster version 3 is refused, naming both.
	leader = testnode.Leader(t, c.nodes)
	err = leader.JoinLeader(ctx, cluster.JoinRequest{ID: "old-node", RaftAddr: "127.0.0.1:1", LogFormat: 3, ClusterVersionMax: 2})
	if restarea.ErrorCode(err) != restarea.CodeConflict || !strings.Contains(err.Error(), "up to 2") || !strings.Contains(err.Error(), "cluster version 3") {
		t.Fatalf("join of a node that knows up to 2: %v, want a conflict naming both versions", err)
	}
	err = leader.JoinLeader(ctx, cluster.JoinRequest{ID: "v010-node", RaftAddr: "127.0.0.1:1", LogFormat: 3})
	if restarea.ErrorCode(err) != restarea.CodeConflict {
		t.Fatalf("join of a node that does not say (v0.1.0): %v, want conflict", err)
	}
	if st, _ := leader.ClusterStatus(ctx); len(st.Members) != 3 {
		t.Fatalf("members after the refused joins: %+v", st.Members)
	}
}

// With --auto-finalize-upgrade the leader finalizes by itself on its
// timer, once the member that was behind runs a newer release. The member
// behind is the first (it bootstraps and leads): a cluster of members that
// all know version 2 would finalize before the member behind could join.
func TestAutoFinalizeUpgrade(t *testing.T) {
	auto := testnode.WithConfig(func(c *server.Config) {
		c.AutoFinalizeUpgrade, c.ExpireInterval = true, 100*time.Millisecond
	})
	cur, prev := playRelease("v0.2.0-test", 2), playRelease("v0.1.9-test", 1)
	c := startVersionCluster(t, []testnode.Option{prev, cur, cur}, auto)
	// A member behind keeps the cluster where it is.
	st, err := c.nodes[0].ClusterStatus(context.Background())
	if err != nil || st.ClusterVersion != 1 {
		t.Fatalf("with a member behind: %+v, %v", st, err)
	}
	c.upgrade(0, cur)
	testnode.WaitClusterVersion(t, 2, c.nodes...)
}

// A member of release v0.1.0 decodes a join strictly and refuses the
// field it does not know: the joiner sends the request again without it,
// and the member (whose cluster runs cluster version 1) admits it.
func TestJoinViaAnOlderMemberDropsTheNewField(t *testing.T) {
	type v010JoinRequest struct { // cluster.JoinRequest as v0.1.0 has it
		ID        string `json:"id"`
		RaftAddr  string `json:"raft_addr"`
		URL       string `json:"url"`
		LogFormat int    `json:"log_format,omitempty"`
	}
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = append(got, string(body))
		var req v010JoinRequest
		if err := decode.JSON(body, &req); err != nil {
			httpx.WriteError(w, err)
			return
		}
		httpx.WriteJSON(w, http.StatusOK, struct{}{})
	}))
	defer srv.Close()
	c := &cluster.Client{Public: srv.Client(), Secret: testnode.Secret}
	req := cluster.JoinRequest{ID: "n2", RaftAddr: "127.0.0.1:2", URL: "http://n2", LogFormat: 3, ClusterVersionMax: 2}
	if err := c.JoinVia(context.Background(), srv.URL, req); err != nil {
		t.Fatalf("join via a v0.1.0 member: %v", err)
	}
	if len(got) != 2 || !strings.Contains(got[0], `"cluster_version_max":2`) || strings.Contains(got[1], "cluster_version_max") {
		t.Fatalf("requests sent: %q, want one with the field, then one without", got)
	}
}
