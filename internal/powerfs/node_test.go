package powerfs_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/powerfs"
	"github.com/restarea/restarea/internal/testkit"
)

// nodeProc is one `restarea serve` process whose data directory is on a
// powerfs mount.
type nodeProc struct {
	m       *machine
	args    []string
	boot    string // the file its boot id is read from
	url     string
	cmd     *exec.Cmd
	log     *testkit.SyncBuffer
	exited  chan struct{}
	startNo int
}

func newNodeProc(t *testing.T, m *machine, httpAddr string, extra ...string) *nodeProc {
	p := &nodeProc{m: m, boot: filepath.Join(t.TempDir(), "boot-id"), url: "http://" + httpAddr}
	p.args = append([]string{"serve",
		"--data-dir", m.path("data"), "--http-addr", httpAddr,
		"--allow-test-boot-id", "--test-boot-id-file", p.boot,
		"--rate-per-source", "10000/m", "--rate-global", "100000/h", "--search-rate-per-source", "10000/m",
		"--max-expensive-requests-per-source", "-1", "--log-level", "warn",
	}, extra...)
	t.Cleanup(p.kill)
	return p
}

// start starts the process with a boot id of its own: every start after
// the first is a reboot.
func (p *nodeProc) start(t *testing.T) {
	t.Helper()
	p.startNo++
	if err := os.WriteFile(p.boot, fmt.Appendf(nil, "boot-%d\n", p.startNo), 0o600); err != nil {
		t.Fatal(err)
	}
	p.log = &testkit.SyncBuffer{}
	p.cmd = exec.Command(testkit.Binary(t), p.args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { cmd.Wait(); close(exited) }(p.cmd, p.exited)
}

// kill is kill -9, waited for.
func (p *nodeProc) kill() {
	if p.cmd != nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
		p.cmd = nil
	}
}

// powerCut cuts the machine's power: the file system drops what was not
// synced, the process dies, and the disk is mounted again.
func (p *nodeProc) powerCut() {
	p.m.fs.Cut()
	p.kill()
	p.m.reboot()
}

func (p *nodeProc) failed(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf(format+"\nnode log (start %d):\n%s", append(args, p.startNo, lastLines(p.log.String(), 40))...)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// acked is an acknowledged post: its request and the id the board gave it.
type acked struct {
	req restarea.PostRequest
	id  string
}

// postAll posts n questions through url, each acknowledged 201.
func postAll(t *testing.T, base, tag string, n int) []acked {
	t.Helper()
	var out []acked
	for i := range n {
		req := testkit.Question(fmt.Sprintf("power cut %s q%dz", tag, i))
		r, e, code := testkit.PostEntry(t, base, req)
		if r.Status != http.StatusCreated {
			t.Fatalf("post %d: %d %s %s", i, r.Status, code, r.Body)
		}
		out = append(out, acked{req, e.ID})
	}
	return out
}

// checkWhole checks, on a node that has just been started on a rebooted
// disk, that once /readyz first answers 200 every acknowledged post is
// there at once, exactly once; that each replay answers 200 replayed
// with the same id; and that search finds each (after its rebuild).
func checkWhole(t *testing.T, p *nodeProc, posts []acked) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-p.exited:
			p.failed(t, "the node exited after the power cut")
		default:
		}
		resp, err := http.Get(p.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			p.failed(t, "the node is not ready 90 s after the power cut (last: %v)", err)
		}
		time.Sleep(20 * time.Millisecond) // polling a process's readiness
	}
	// Ready: the state must be whole now, without waiting.
	for _, a := range posts {
		if r := testkit.Get(t, p.url+"/api/v1/threads/"+a.id); r.Status != http.StatusOK {
			p.failed(t, "ready, but acknowledged post %s (%q) answers %d: %s", a.id, a.req.Title, r.Status, r.Body)
		}
	}
	var page struct {
		Data restarea.ThreadPage `json:"data"`
	}
	r := testkit.Get(t, p.url+"/api/v1/threads?limit=100")
	if err := json.Unmarshal([]byte(r.Body), &page); err != nil || r.Status != http.StatusOK {
		t.Fatalf("list threads: %d %s", r.Status, r.Body)
	}
	seen := map[string]int{}
	for _, e := range page.Data.Threads {
		if strings.HasPrefix(e.Title, "power cut ") {
			seen[e.Title]++
		}
	}
	for _, a := range posts {
		if seen[a.req.Title] != 1 {
			t.Errorf("%q is listed %d times, want once", a.req.Title, seen[a.req.Title])
		}
	}
	if len(seen) != len(posts) {
		t.Errorf("%d distinct posts listed, want %d", len(seen), len(posts))
	}
	for _, a := range posts {
		r, e, code := testkit.PostEntry(t, p.url, a.req)
		if r.Status != http.StatusOK || !strings.Contains(r.Body, `"replayed":true`) || e.ID != a.id {
			t.Errorf("replay of %q: %d %s id %s, want 200 replayed %s", a.req.Title, r.Status, code, e.ID, a.id)
		}
	}
	for _, a := range posts {
		words := strings.Fields(a.req.Title)
		q := strings.Join(words[len(words)-2:], " ") // "r0 q3z": unique to the post
		testkit.Eventually(t, 60*time.Second, "search to find "+a.req.Title, func() error {
			r := testkit.Get(t, p.url+"/api/v1/search?q="+url.QueryEscape(q))
			if r.Status != http.StatusOK {
				return fmt.Errorf("search: %d %s", r.Status, r.Body)
			}
			if !strings.Contains(r.Body, `"id":"`+a.id+`"`) {
				return fmt.Errorf("search for %q does not find %s: %s", q, a.id, r.Body)
			}
			return nil
		})
	}
}

// One node process on powerfs: posts, acknowledged, survive a power cut
// (unsynced writes and names dropped, the process killed) and a restart
// with a new boot id.
func TestNodeSurvivesPowerCut(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	m := newMachine(t, powerfs.Options{WritebackCache: true})
	p := newNodeProc(t, m, testkit.FreeAddr(t), "--raft-addr", testkit.FreeAddr(t))
	p.start(t)
	testkit.WaitOK(t, 60*time.Second, p.url+"/readyz")
	var posts []acked
	for round := range 3 {
		tag := fmt.Sprintf("r%d", round)
		posts = append(posts, postAll(t, p.url, tag, 15)...)
		t.Logf("round %d: %d posts acknowledged; pending before the cut: %+v", round, len(posts), m.fs.Stats())
		p.powerCut()
		p.start(t)
		checkWhole(t, p, posts)
	}
}

// Three node processes, each on its own powerfs, all cut at once: every
// acknowledged post was fsynced in the raft log of a majority, so every
// one must survive, on every node.
func TestClusterSurvivesPowerCutOfAllNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	const nodes = 3
	var httpAddrs, urls []string
	for range nodes {
		a := testkit.FreeAddr(t)
		httpAddrs, urls = append(httpAddrs, a), append(urls, "http://"+a)
	}
	var procs []*nodeProc
	for i := range nodes {
		p := newNodeProc(t, newMachine(t, powerfs.Options{WritebackCache: true}), httpAddrs[i],
			"--node-id", fmt.Sprintf("node%d", i+1), "--raft-addr", testkit.FreeAddr(t),
			"--advertise-url", urls[i], "--public-url", urls[0],
			"--join", strings.Join(urls, ","), "--bootstrap-expect", fmt.Sprint(nodes),
			"--cluster-secret", "power-cut-cluster-secret")
		p.start(t)
		procs = append(procs, p)
	}
	for _, p := range procs {
		testkit.WaitOK(t, 90*time.Second, p.url+"/readyz")
	}
	var posts []acked
	for round := range 2 {
		// Posts through every node: followers forward to the leader.
		for i, p := range procs {
			posts = append(posts, postAll(t, p.url, fmt.Sprintf("r%dn%d", round, i), 8)...)
		}
		for _, p := range procs {
			p.m.fs.Cut() // all at once, before any process dies
		}
		for _, p := range procs {
			p.kill()
			p.m.reboot()
		}
		for _, p := range procs {
			p.start(t)
		}
		for _, p := range procs {
			checkWhole(t, p, posts)
		}
		t.Logf("round %d: %d acknowledged posts survived a power cut of all %d nodes", round, len(posts), nodes)
	}
}
