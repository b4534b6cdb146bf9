package node_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// TestMain lets this test binary also run as a node process, so a test
// can SIGKILL a real node without building anything.
func TestMain(m *testing.M) {
	if dir := os.Getenv("RESTAREA_HELPER_NODE"); dir != "" {
		os.Exit(helperNode(dir))
	}
	os.Exit(m.Run())
}

func helperNode(dir string) int {
	cfg := server.Config{Config: node.Defaults()}
	cfg.DataDir = dir
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.RaftAddr = os.Getenv("RESTAREA_HELPER_RAFT")
	cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = 200*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond
	cfg.Logger = testnode.Logger()
	cfg.RaftLogOutput = io.Discard
	cfg.RatePerSource = restarea.Limit{Count: 1000, WindowSeconds: 60}
	n, err := server.Start(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(n.URL())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	n.Close()
	return 0
}

type helperProc struct {
	cmd *exec.Cmd
	url string
}

func startHelper(t *testing.T, dir, raftAddr string) *helperProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RESTAREA_HELPER_NODE="+dir, "RESTAREA_HELPER_RAFT="+raftAddr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper node did not start: %v", err)
	}
	h := &helperProc{cmd: cmd, url: strings.TrimSpace(line)}
	testkit.WaitOK(t, 30*time.Second, h.url+"/readyz")
	return h
}

func freeAddr(t *testing.T) string {
	t.Helper()
	n := testnode.Start(t)
	addr := n.RaftAddr()
	n.Close()
	return addr
}

func postJSON(t *testing.T, url string, req restarea.PostRequest) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(req)
	resp, err := http.Post(url+"/api/v1/entries", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	var body struct {
		Data  map[string]any `json:"data"`
		Error map[string]any `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&body)
	if body.Data == nil {
		return resp.StatusCode, body.Error
	}
	return resp.StatusCode, body.Data
}

// A node killed with SIGKILL (no shutdown at all) and restarted on its
// data dir still has every acknowledged entry, answers their replays with
// 200 replayed, and stores nothing twice.
func TestKillAndRestartKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	dir := t.TempDir()
	raftAddr := freeAddr(t)
	h := startHelper(t, dir, raftAddr)
	reqs := make([]restarea.PostRequest, 20)
	ids := map[string]string{}
	for i := range reqs {
		reqs[i] = testkit.Question("How do retries work?")
		reqs[i].Title = fmt.Sprintf("question %d", i)
		code, data := postJSON(t, h.url, reqs[i])
		if code != http.StatusCreated {
			t.Fatalf("post %d: %d %v", i, code, data)
		}
		ids[reqs[i].RequestID] = data["id"].(string)
	}
	h.cmd.Process.Signal(syscall.SIGKILL)
	h.cmd.Wait()

	h = startHelper(t, dir, raftAddr)
	for _, r := range reqs {
		code, data := postJSON(t, h.url, r)
		if code != http.StatusOK || data["replayed"] != true || data["id"] != ids[r.RequestID] {
			t.Fatalf("replay after kill: %d %v, want 200 replayed id %s", code, data, ids[r.RequestID])
		}
	}
	resp, err := http.Get(h.url + "/api/v1/threads?limit=200")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Data restarea.ThreadPage `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&page)
	if len(page.Data.Threads) != len(reqs) {
		t.Fatalf("%d threads after restart, want %d", len(page.Data.Threads), len(reqs))
	}
}

// A graceful stop and restart on the same data dir keeps everything, and
// the state machine does not apply the log a second time.
func TestRestartDoesNotReapply(t *testing.T) {
	dir := t.TempDir()
	cfg := testnode.Config(t, testnode.WithDataDir(dir), testnode.WithConfig(func(c *server.Config) { c.PublicURL = "https://rest.example" }))
	n, err := server.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testnode.WaitReady(t, n)
	ctx := context.Background()
	meta := restarea.PostMeta{Source: "192.0.2.1", Channel: restarea.ChannelMCP}
	q, err := n.Post(ctx, testkit.Question("How do retries work?"), meta)
	if err != nil {
		t.Fatal(err)
	}
	reply := testkit.Reply(q.Entry.ID, "an answer")
	if _, err := n.Post(ctx, reply, meta); err != nil {
		t.Fatal(err)
	}
	before, _ := n.ListEntries(ctx, restarea.ListOptions{})
	n.Close()

	n2 := testnode.StartConfig(t, cfg)
	after, err := n2.ListEntries(ctx, restarea.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, before, after) {
		t.Fatalf("entries changed across restart:\n%+v\n%+v", before, after)
	}
	res, err := n2.Post(ctx, reply, restarea.PostMeta{Source: "192.0.2.1", Channel: restarea.ChannelHTTP})
	if err != nil || !res.Replayed || res.Entry.Channel != restarea.ChannelMCP {
		t.Fatalf("replay after restart: %+v %v", res, err)
	}
}

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// A backup restored into a fresh node answers every read byte for byte
// like the node it came from, and keeps answering replays.
func TestBackupRestoreIdenticalAnswers(t *testing.T) {
	const base = "https://rest.example"
	src := testnode.Start(t, testnode.WithConfig(func(c *server.Config) { c.PublicURL = base }))
	ctx := context.Background()
	meta := restarea.PostMeta{Source: "198.51.100.7", Channel: restarea.ChannelHTTP}
	var qs []restarea.PostResult
	var reqs []restarea.PostRequest
	for i := range 5 {
		r := testkit.Question("How do retries work?")
		r.Title = fmt.Sprintf("q%d", i)
		res, err := src.Post(ctx, r, meta)
		if err != nil {
			t.Fatal(err)
		}
		qs, reqs = append(qs, res), append(reqs, r)
		for j := range 3 {
			_, err := src.Post(ctx, testkit.Reply(res.Entry.ID, fmt.Sprintf("reply %d", j)), meta)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := src.HideEntry(ctx, qs[1].Entry.ID); err != nil {
		t.Fatal(err)
	}
	if err := src.DeleteEntry(ctx, qs[2].Entry.ID); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	f, err := os.Create(backup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.WriteBackup(ctx, f); err != nil {
		t.Fatal(err)
	}
	f.Close()

	dst := testnode.Start(t, testnode.WithConfig(func(c *server.Config) { c.PublicURL = base }))
	if err := dst.RestoreBackup(ctx, backup); err != nil {
		t.Fatalf("restore: %v", err)
	}
	answers := func(n *node.Node) []any {
		threads, _ := n.ListThreads(ctx, restarea.ListOptions{})
		all, _ := n.ListEntries(ctx, restarea.ListOptions{})
		out := []any{threads, all}
		for _, q := range qs {
			th, err1 := n.GetThread(ctx, q.Entry.ID, restarea.ReadOptions{})
			rs, err2 := n.ListReplies(ctx, q.Entry.ID, restarea.ListOptions{})
			out = append(out, th, fmt.Sprint(err1), rs, fmt.Sprint(err2))
		}
		s, _ := n.Settings(ctx)
		return append(out, s)
	}
	if !jsonEqual(t, answers(src), answers(dst)) {
		t.Fatalf("restored node answers differently")
	}
	// Replays still resolve on the restored node, deleted stays deleted.
	res, err := dst.Post(ctx, reqs[0], meta)
	if err != nil || !res.Replayed || res.Entry.ID != qs[0].Entry.ID {
		t.Fatalf("replay on restored node: %+v %v", res, err)
	}
	if _, err := dst.Post(ctx, reqs[2], meta); restarea.ErrorCode(err) != restarea.CodeDeleted {
		t.Fatalf("replay of deleted on restored node: %v", err)
	}
	// And the restored node takes new writes.
	if _, err := dst.Post(ctx, testkit.Question("How do retries work?"), meta); err != nil {
		t.Fatalf("new post after restore: %v", err)
	}
}

// A machine that goes down while the state file is written without fsync
// may leave it torn. The next start (another boot) sets it aside and
// rebuilds the state from the last snapshot and the raft log, and
// answers exactly as before.
func TestMachineCrashRebuildsStateFromSnapshotAndLog(t *testing.T) {
	dir := t.TempDir()
	boot := "boot-1"
	cfg := testnode.Config(t, testnode.WithDataDir(dir), testnode.WithConfig(func(c *server.Config) {
		c.PublicURL = "https://rest.example"
		c.SnapshotThreshold, c.TrailingLogs, c.SnapshotInterval = 40, 10, 50*time.Millisecond
		c.BootID = func() string { return boot }
	}))
	n, err := server.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testnode.WaitReady(t, n)
	ctx := context.Background()
	meta := restarea.PostMeta{Source: "192.0.2.1", Channel: restarea.ChannelHTTP}
	var reqs []restarea.PostRequest
	for i := 0; i < 120; i++ {
		req := testkit.Question("How do retries work?")
		if _, err := n.Post(ctx, req, meta); err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, req)
	}
	testkit.Eventually(t, 30*time.Second, "a snapshot", func() error {
		if snaps, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin")); len(snaps) == 0 {
			return errors.New("no snapshot was taken")
		}
		return nil
	})
	// A few more after the snapshot, which only the log holds.
	for i := 0; i < 5; i++ {
		req := testkit.Question("How do retries work?")
		if _, err := n.Post(ctx, req, meta); err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, req)
	}
	before, _ := n.ListEntries(ctx, restarea.ListOptions{Limit: 200})
	n.Kill()

	boot = "boot-2"
	n2 := testnode.StartConfig(t, cfg)
	if torn, _ := filepath.Glob(filepath.Join(dir, "state.db.torn-*")); len(torn) != 1 {
		t.Fatalf("torn state files set aside: %v, want one", torn)
	}
	after, err := n2.ListEntries(ctx, restarea.ListOptions{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, before, after) {
		t.Fatalf("entries changed across the rebuild:\n%+v\n%+v", before, after)
	}
	for _, req := range []restarea.PostRequest{reqs[0], reqs[len(reqs)-1]} {
		res, err := n2.Post(ctx, req, meta)
		if err != nil || !res.Replayed {
			t.Fatalf("replay after the rebuild: %+v %v", res, err)
		}
	}
}
