package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// The backup round trip, as an operator runs it: GET /api/v1/admin/backup
// from a running node, `restarea restore` into a new data dir, `restarea
// serve` on it — the same threads, replays still resolve — and a node
// that joins the restored one receives the state.
func TestBackupRestoreServeRoundTrip(t *testing.T) {
	const token = "restore-test-token"
	src := testnode.Start(t, testnode.WithAdminToken(token))
	ctx := context.Background()
	meta := restarea.PostMeta{Source: "192.0.2.10", Channel: restarea.ChannelHTTP}
	req := testkit.Question("kept across restore")
	first, err := src.Post(ctx, req, meta)
	if err != nil {
		t.Fatal(err)
	}

	breq, _ := http.NewRequest("GET", src.URL()+"/api/v1/admin/backup", nil)
	breq.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(breq)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("backup: %v %v", resp, err)
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	f, _ := os.Create(backup)
	io.Copy(f, resp.Body)
	resp.Body.Close()
	f.Close()

	dir := filepath.Join(t.TempDir(), "restored")
	raftAddr := testkit.FreeAddr(t)
	if code, out, errOut := run(t, "restore", "--from", backup, "--data-dir", dir, "--raft-addr", raftAddr); code != 0 {
		t.Fatalf("restore exited %d: %s %s", code, out, errOut)
	}
	if code, _, _ := run(t, "restore", "--from", backup, "--data-dir", dir); code == 0 {
		t.Fatal("restore into a data dir that holds a node succeeded")
	}

	httpAddr := testkit.FreeAddr(t)
	base := serveDataDir(t, dir, raftAddr, httpAddr)
	wantReplay(t, base, req, first.Entry.ID)

	// A second node joins the restored one and receives the state.
	joiner := testnode.StartConfig(t, testnode.Config(t, testnode.WithConfig(func(c *server.Config) {
		c.ClusterSecret = testnode.Secret
		c.JoinURLs = []string{base}
		// The restored node runs with the default limits; the joiner
		// waits until those are in force.
		c.RatePerSource, c.RateGlobal = node.Defaults().RatePerSource, node.Defaults().RateGlobal
	})))
	testnode.WaitThread(t, []*node.Node{joiner}, first.Entry.ID)
}

// serveDataDir runs `restarea serve` on dir (a node restored or recovered
// there) until the test ends, and returns its base URL once it is ready.
func serveDataDir(t *testing.T, dir, raftAddr, httpAddr string) string {
	t.Helper()
	cmd := exec.Command(testkit.Binary(t), "serve", "--data-dir", dir, "--raft-addr", raftAddr, "--http-addr", httpAddr,
		"--cluster-secret", string(testnode.Secret), "--log-level", "warn")
	cmd.Env = cleanEnv()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := "http://" + httpAddr
	testkit.WaitOK(t, 30*time.Second, base+"/readyz")
	return base
}

// wantReplay posts req again to base and wants the first result back:
// 200, replayed, the entry id.
func wantReplay(t *testing.T, base string, req restarea.PostRequest, id string) {
	t.Helper()
	body, _ := json.Marshal(req)
	r, err := http.Post(base+"/api/v1/entries", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var out struct {
		Data struct {
			ID       string `json:"id"`
			Replayed bool   `json:"replayed"`
		} `json:"data"`
	}
	json.NewDecoder(r.Body).Decode(&out)
	if r.StatusCode != http.StatusOK || !out.Data.Replayed || out.Data.ID != id {
		t.Fatalf("replay on %s: %d %+v, want 200 replayed %s", base, r.StatusCode, out.Data, id)
	}
}
