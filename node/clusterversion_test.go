package node_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
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

// withClusterVersionMax makes a node play a release that knows cluster
// versions up to max, as --test-cluster-version-max does.
func withClusterVersionMax(max int, version string) testnode.Option {
	return testnode.WithConfig(func(c *server.Config) { c.ClusterVersionMax, c.Version = max, version })
}

// startMember starts a node that joins the cluster of first.
func startMember(t *testing.T, first *node.Node, opts ...testnode.Option) *node.Node {
	t.Helper()
	opts = append([]testnode.Option{testnode.WithConfig(func(c *server.Config) {
		c.ClusterSecret, c.JoinURLs = testnode.Secret, []string{first.URL()}
		c.LeaderWait, c.ApplyTimeout = 3*time.Second, 5*time.Second
	})}, opts...)
	n, err := server.Start(testnode.Config(t, opts...))
	if err != nil {
		t.Fatalf("start member: %v", err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// dirHashes returns the SHA-256 of every file under dir, by path.
func dirHashes(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[path] = sha256.Sum256(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A node whose binary does not know a cluster version the log raises
// stops applying at that entry and stops itself, logging an ERROR naming
// both versions; the others carry on. Restarted on the same binary it
// stops again at the same entry; on a binary that knows the version it
// catches up.
func TestNodeStopsOnAnUnknownClusterVersion(t *testing.T) {
	cfg := testnode.WithConfig(func(c *server.Config) {
		c.ClusterSecret = testnode.Secret
		c.LeaderWait, c.ApplyTimeout = 3*time.Second, 5*time.Second
	})
	first := testnode.Start(t, cfg, withClusterVersionMax(3, "v-next"), testnode.FormedByV010())
	second := startMember(t, first, withClusterVersionMax(3, "v-next"))
	var logs testkit.SyncBuffer
	dir := t.TempDir()
	// The same raft address on every restart: a binary that does not know
	// the cluster version is refused when it announces a new one (a join).
	addr := testkit.FreeAddr(t)
	raftAddr := testnode.WithConfig(func(c *server.Config) { c.RaftAddr = addr })
	old := startMember(t, first, withClusterVersionMax(2, "v-now"), testnode.WithDataDir(dir), raftAddr,
		testnode.WithConfig(func(c *server.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) }))
	nodes := []*node.Node{first, second, old}
	testnode.WaitMembers(t, nodes, 3)
	leader := testnode.Leader(t, nodes)
	if leader == old {
		if err := old.TransferLeadership(context.Background(), first.ID()); err != nil {
			t.Fatal(err)
		}
		leader = testnode.Leader(t, nodes[:2])
	}
	ctx := context.Background()
	for v := 2; v <= 3; v++ {
		res, err := leader.Propose(ctx, &fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: v})
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatalf("raise to %d: %v", v, err)
		}
	}
	select {
	case <-old.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the node that does not know cluster version 3 did not stop")
	}
	var e *fsm.UnknownClusterVersionError
	if err := old.Halted(); !errors.As(err, &e) || e.Version != 3 || e.Max != 2 {
		t.Fatalf("Halted() = %v, want cluster version 3 above 2", err)
	}
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "level=ERROR") && strings.Contains(l, "stopping") {
			line = l
		}
	}
	if !strings.Contains(line, "cluster version to 3") || !strings.Contains(line, "up to cluster version 2") {
		t.Fatalf("no ERROR line naming both versions:\n%s", logs.String())
	}
	for _, n := range nodes[:2] {
		testkit.Eventually(t, 20*time.Second, n.ID()+" at cluster version 3", func() error {
			st, err := n.ClusterStatus(ctx)
			if err == nil && st.ClusterVersion != 3 {
				err = fmt.Errorf("cluster version %d", st.ClusterVersion)
			}
			return err
		})
	}
	// The stopped node's state file stayed at 2: the same binary starts,
	// meets the raise again and stops again.
	if v, err := fsm.ReadClusterVersion(filepath.Join(dir, "state.db")); err != nil || v != 2 {
		t.Fatalf("stopped node's state file: cluster version %d, %v; want 2", v, err)
	}
	again := startMember(t, first, withClusterVersionMax(2, "v-now"), testnode.WithDataDir(dir), raftAddr)
	select {
	case <-again.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("restarted on the same binary, the node did not stop again")
	}
	upgraded := startMember(t, first, withClusterVersionMax(3, "v-next"), testnode.WithDataDir(dir), raftAddr)
	testkit.Eventually(t, 30*time.Second, "the upgraded node at cluster version 3", func() error {
		st, err := upgraded.ClusterStatus(ctx)
		if err == nil && st.ClusterVersion != 3 {
			err = fmt.Errorf("cluster version %d", st.ClusterVersion)
		}
		return err
	})
	if upgraded.Halted() != nil {
		t.Fatalf("the upgraded node stopped: %v", upgraded.Halted())
	}
}

// A node whose binary knows less than the cluster version its own state
// file records refuses to start, naming both versions, and writes nothing
// to its data directory.
func TestStartRefusedOnAnUnknownClusterVersion(t *testing.T) {
	dir := t.TempDir()
	n := testnode.Start(t, testnode.WithDataDir(dir), withClusterVersionMax(3, "v-next"))
	res, err := n.FinalizeUpgrade(context.Background())
	if err != nil || res.To != 3 || res.Status.ClusterVersion != 3 {
		t.Fatalf("finalize on a single node: %+v, %v", res, err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	before := dirHashes(t, dir)
	_, err = server.Start(testnode.Config(t, testnode.WithDataDir(dir), withClusterVersionMax(2, "v-now")))
	if !errors.Is(err, node.ErrUnknownClusterVersion) {
		t.Fatalf("start on a finalized directory with an older binary: %v", err)
	}
	for _, want := range []string{"cluster version 3", "(v-now) knows up to 2", "run a release that knows it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
	after := dirHashes(t, dir)
	if len(before) == 0 || fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("the refused start changed the data directory:\nbefore %x\nafter  %x", before, after)
	}
	// The release that knows it starts on it.
	m := testnode.Start(t, testnode.WithDataDir(dir), withClusterVersionMax(3, "v-next"))
	if st, err := m.ClusterStatus(context.Background()); err != nil || st.ClusterVersion != 3 || st.ClusterVersionMax != 3 {
		t.Fatalf("status after restart: %+v, %v", st, err)
	}
}
