package deploy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/testkit"
)

// totalTimeout bounds the whole test, image build included.
const totalTimeout = 4 * time.Minute

// services are the compose services; each one's node id is its name.
var services = []string{"node1", "node2", "node3"}

// TestComposeCluster builds the image the way `make image` does, starts
// docker-compose.yml under a unique project name and free loopback ports,
// posts through every node, kills the leader's container with SIGKILL,
// keeps posting through the survivors, restarts the killed container and
// checks that all three nodes hold every acknowledged entry exactly once.
func TestComposeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: -short: this test builds a docker image and runs a three-container cluster")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("SKIP: docker is not on PATH")
	}
	{
		ictx, icancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ictx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput()
		icancel()
		if err != nil {
			t.Skipf("SKIP: the docker engine does not answer (docker info: %v: %s)", err, firstLine(out))
		}
	}
	composeCmd := findCompose()
	if composeCmd == nil {
		t.Skip("SKIP: neither `docker compose` nor `docker-compose` works here")
	}

	ctx, cancel := context.WithTimeout(context.Background(), totalTimeout)
	defer cancel()
	begin := time.Now()
	logf := func(format string, a ...any) {
		t.Helper()
		t.Logf("[%5.1fs] "+format, append([]any{time.Since(begin).Seconds()}, a...)...)
	}

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	suffix := randHex(4)
	project := "restarea-test-" + suffix
	image := "restarea:test-" + suffix

	// 1. The image: a static linux binary, then FROM scratch.
	buildImage(ctx, t, root, image, logf)

	// 2. The cluster, on ports nobody else uses.
	var ports [3]int
	for i := range ports {
		ports[i] = testkit.FreePort(t)
	}
	c := &cluster{
		t:       t,
		ctx:     ctx,
		compose: composeCmd,
		file:    filepath.Join(root, "docker-compose.yml"),
		project: project,
		ports:   ports,
		http:    &http.Client{Timeout: 20 * time.Second},
		logf:    logf,
		env: []string{
			"RESTAREA_IMAGE=" + image,
			"RESTAREA_PORT1=" + strconv.Itoa(ports[0]),
			"RESTAREA_PORT2=" + strconv.Itoa(ports[1]),
			"RESTAREA_PORT3=" + strconv.Itoa(ports[2]),
			"RESTAREA_PUBLIC_URL=http://127.0.0.1:" + strconv.Itoa(ports[0]),
			"RESTAREA_CLUSTER_SECRET=" + randHex(24),
			"RESTAREA_ADMIN_TOKEN=" + randHex(16),
			// Every request comes from the same address (the docker
			// gateway); retries during the failover must not hit 429.
			"RESTAREA_RATE_PER_SOURCE=6000/m",
		},
	}
	t.Cleanup(c.teardown)
	logf("starting project %s (ports %v, image %s, %s)", project, ports, image, strings.Join(composeCmd, " "))
	c.composeRun(ctx, "up", "-d", "--no-build")

	c.waitReady([]int{0, 1, 2}, 90*time.Second)
	c.waitLeader([]int{0, 1, 2}, "", 30*time.Second)
	logf("all three nodes ready")

	// 3. One question through each node, then a replay through another.
	acked := map[string]string{} // request_id → entry id
	var bodies []map[string]any
	for i := range services {
		q := question(fmt.Sprintf("compose test %s: question %d via %s", suffix, i+1, services[i]))
		id, status := c.postAcked(i, q, 30*time.Second)
		if status != http.StatusCreated {
			t.Fatalf("first post through %s: status %d, want 201", services[i], status)
		}
		acked[q["request_id"].(string)] = id
		bodies = append(bodies, q)
		logf("posted %s through %s: 201 id=%s", q["request_id"], services[i], id)
	}
	{
		st, res, err := c.post(1, bodies[0])
		if err != nil || st != http.StatusOK || !res.Data.Replayed || res.Data.ID != acked[bodies[0]["request_id"].(string)] {
			t.Fatalf("replay through node2: status %d, err %v, answer %+v; want 200 replayed with id %s",
				st, err, res, acked[bodies[0]["request_id"].(string)])
		}
		logf("replay through node2: 200 replayed, same id %s", res.Data.ID)
	}

	// 4. Kill the leader's container outright.
	leader := c.waitLeader([]int{0, 1, 2}, "", 30*time.Second)
	li := slices.Index(services, leader)
	if li < 0 {
		t.Fatalf("leader id %q is not one of %v", leader, services)
	}
	container := c.containerID(leader)
	logf("leader is %s (container %.12s): docker kill", leader, container)
	c.docker(ctx, "kill", container)
	var survivors []int
	for i := range services {
		if i != li {
			survivors = append(survivors, i)
		}
	}

	// 5. Post through both survivors; 503 (no leader yet) is retried with
	// the same request_id until it is acknowledged.
	for k, i := range survivors {
		q := question(fmt.Sprintf("compose test %s: question %d via %s with %s down", suffix, 4+k, services[i], leader))
		id, status := c.postAcked(i, q, 90*time.Second)
		acked[q["request_id"].(string)] = id
		logf("posted %s through %s with the leader down: %d id=%s", q["request_id"], services[i], status, id)
	}
	newLeader := c.waitLeader(survivors, leader, 30*time.Second)
	logf("new leader: %s", newLeader)

	// 6. Bring the killed node back.
	logf("%s container before docker start: %s", leader,
		c.docker(ctx, "inspect", "-f", "{{.State.Status}} exit={{.State.ExitCode}} restarts={{.RestartCount}}", container))
	c.docker(ctx, "start", container)
	logf("docker start %s", leader)
	c.waitReady([]int{0, 1, 2}, 90*time.Second)
	logf("all three nodes ready again")

	// 7. Everyone agrees, and every acknowledged entry is there once.
	leader = c.waitLeader([]int{0, 1, 2}, "", 30*time.Second)
	li = slices.Index(services, leader)
	strong := c.threadIDs(li, true)
	checkExactlyOnce(t, "strong read on leader "+leader, strong, acked)
	st := c.status(li)
	logf("leader %s: %d threads (strong read), commit_index %d", leader, len(strong), st.CommitIndex)
	for i := range services {
		c.waitApplied(i, st.CommitIndex, 30*time.Second)
		local := c.threadIDs(i, false)
		checkExactlyOnce(t, "local read on "+services[i], local, acked)
		if !slices.Equal(local, strong) {
			t.Errorf("local read on %s lists %v, leader's strong read lists %v", services[i], local, strong)
		}
	}
	logf("all three nodes list the same %d threads; done", len(strong))
}

// buildImage builds the static binary and the image from a private copy of
// the context (Dockerfile, .dockerignore, build/image/restarea), so the
// working tree is left alone, and removes the image when the test ends.
func buildImage(ctx context.Context, t *testing.T, root, image string, logf func(string, ...any)) {
	t.Helper()
	dir := t.TempDir()
	logf("go build (static, linux/%s)", runtime.GOARCH)
	testkit.BuildStatic(ctx, t, filepath.Join(dir, "build", "image", "restarea"), "compose-test")
	if err := os.MkdirAll(filepath.Join(dir, "build", "image", "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"Dockerfile", ".dockerignore"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logf("docker build -t %s", image)
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(cctx, "docker", "rmi", "-f", image).CombinedOutput(); err != nil {
			t.Logf("docker rmi %s: %v: %s", image, err, out)
		}
	})
	if out, err := exec.CommandContext(ctx, "docker", "build", "-q", "-t", image, dir).CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
}

type cluster struct {
	t       *testing.T
	ctx     context.Context
	compose []string
	file    string
	project string
	env     []string
	ports   [3]int
	http    *http.Client
	logf    func(string, ...any)
}

func (c *cluster) composeCmd(ctx context.Context, args ...string) *exec.Cmd {
	all := append(append(slices.Clone(c.compose[1:]), "-f", c.file, "-p", c.project), args...)
	cmd := exec.CommandContext(ctx, c.compose[0], all...)
	cmd.Dir = filepath.Dir(c.file)
	cmd.Env = append(os.Environ(), c.env...)
	return cmd
}

func (c *cluster) composeRun(ctx context.Context, args ...string) string {
	c.t.Helper()
	out, err := c.composeCmd(ctx, args...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("compose %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (c *cluster) docker(ctx context.Context, args ...string) string {
	c.t.Helper()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// teardown runs even after a failure (or a timeout of the test context):
// on failure it first logs the containers' output.
func (c *cluster) teardown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if c.t.Failed() {
		if out, err := c.composeCmd(ctx, "logs", "--no-color", "--tail", "80").CombinedOutput(); err == nil {
			c.t.Logf("compose logs:\n%s", out)
		}
	}
	if out, err := c.composeCmd(ctx, "down", "-v", "--remove-orphans", "-t", "5").CombinedOutput(); err != nil {
		c.t.Errorf("compose down: %v\n%s", err, out)
	} else {
		c.t.Logf("compose down -v --remove-orphans: project %s removed", c.project)
	}
}

func (c *cluster) containerID(service string) string {
	c.t.Helper()
	id := strings.TrimSpace(c.composeRun(c.ctx, "ps", "-q", service))
	if id == "" || strings.ContainsAny(id, " \n") {
		c.t.Fatalf("compose ps -q %s: %q", service, id)
	}
	return id
}

func (c *cluster) url(i int, path string) string {
	return "http://127.0.0.1:" + strconv.Itoa(c.ports[i]) + path
}

// get fetches path from node i into out (the "data" member).
func (c *cluster) get(i int, path string, out any) (int, error) {
	req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, c.url(i, path), nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode != http.StatusOK || out == nil {
		return resp.StatusCode, nil
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return resp.StatusCode, fmt.Errorf("%s: %v: %s", path, err, b)
	}
	return resp.StatusCode, json.Unmarshal(env.Data, out)
}

// poll calls try every 500ms until it reports done, the deadline passes
// (fatal, with what) or the test context ends.
func (c *cluster) poll(what string, within time.Duration, try func() (bool, string)) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	lastLog := time.Now()
	for {
		done, state := try()
		if done {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not reached within %v (last: %s)", what, within, state)
		}
		if time.Since(lastLog) > 5*time.Second {
			c.logf("waiting: %s (%s)", what, state)
			lastLog = time.Now()
		}
		select {
		case <-c.ctx.Done():
			c.t.Fatalf("%s: test timeout (last: %s)", what, state)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (c *cluster) waitReady(nodes []int, within time.Duration) {
	c.t.Helper()
	c.poll("/readyz on every node", within, func() (bool, string) {
		var parts []string
		ok := true
		for _, i := range nodes {
			st, err := c.get(i, "/readyz", nil)
			if err != nil {
				parts = append(parts, services[i]+"="+shortErr(err))
			} else {
				parts = append(parts, fmt.Sprintf("%s=%d", services[i], st))
			}
			ok = ok && err == nil && st == http.StatusOK
		}
		return ok, strings.Join(parts, " ")
	})
}

type clusterStatus struct {
	NodeID       string `json:"node_id"`
	State        string `json:"state"`
	LeaderID     string `json:"leader_id"`
	LeaderURL    string `json:"leader_url"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	Members      []struct {
		ID       string `json:"id"`
		RaftAddr string `json:"raft_addr"`
		URL      string `json:"url"`
		Suffrage string `json:"suffrage"`
	} `json:"members"`
}

func (c *cluster) status(i int) clusterStatus {
	c.t.Helper()
	var st clusterStatus
	code, err := c.get(i, "/api/v1/cluster", &st)
	if err != nil || code != http.StatusOK {
		c.t.Fatalf("GET /api/v1/cluster on %s: %d %v", services[i], code, err)
	}
	return st
}

// waitLeader waits until every node in nodes names the same leader, other
// than not, with three members, and returns its id.
func (c *cluster) waitLeader(nodes []int, not string, within time.Duration) string {
	c.t.Helper()
	var leader string
	c.poll("one leader seen by "+fmt.Sprint(nodes), within, func() (bool, string) {
		leader = ""
		var parts []string
		agree := true
		for _, i := range nodes {
			var st clusterStatus
			code, err := c.get(i, "/api/v1/cluster", &st)
			if err != nil || code != http.StatusOK {
				parts = append(parts, fmt.Sprintf("%s: %d %s", services[i], code, shortErr(err)))
				agree = false
				continue
			}
			parts = append(parts, fmt.Sprintf("%s: %s leader=%q members=%d", services[i], st.State, st.LeaderID, len(st.Members)))
			if st.LeaderID == "" || st.LeaderID == not || len(st.Members) != 3 || (leader != "" && st.LeaderID != leader) {
				agree = false
			}
			leader = st.LeaderID
		}
		return agree, strings.Join(parts, "; ")
	})
	return leader
}

func (c *cluster) waitApplied(i int, index uint64, within time.Duration) {
	c.t.Helper()
	c.poll(fmt.Sprintf("%s applied_index >= %d", services[i], index), within, func() (bool, string) {
		var st clusterStatus
		code, err := c.get(i, "/api/v1/cluster", &st)
		if err != nil || code != http.StatusOK {
			return false, fmt.Sprintf("%d %s", code, shortErr(err))
		}
		return st.AppliedIndex >= index, fmt.Sprintf("applied %d", st.AppliedIndex)
	})
}

func (c *cluster) threadIDs(i int, strong bool) []string {
	c.t.Helper()
	path := "/api/v1/threads?limit=200"
	if strong {
		path += "&consistency=strong"
	}
	var list struct {
		Threads []struct {
			ID string `json:"id"`
		} `json:"threads"`
		NextCursor *string `json:"next_cursor"`
	}
	code, err := c.get(i, path, &list)
	if err != nil || code != http.StatusOK {
		c.t.Fatalf("GET %s on %s: %d %v", path, services[i], code, err)
	}
	ids := make([]string, 0, len(list.Threads))
	for _, th := range list.Threads {
		ids = append(ids, th.ID)
	}
	return ids
}

type postAnswer struct {
	Data struct {
		ID       string `json:"id"`
		Replayed bool   `json:"replayed"`
	} `json:"data"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	retryAfter time.Duration
}

func (c *cluster) post(i int, body map[string]any) (int, postAnswer, error) {
	var ans postAnswer
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, c.url(i, "/api/v1/entries"), bytes.NewReader(b))
	if err != nil {
		return 0, ans, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, ans, err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, ans, err
	}
	if err := json.Unmarshal(rb, &ans); err != nil {
		return resp.StatusCode, ans, fmt.Errorf("answer %d: %v: %s", resp.StatusCode, err, rb)
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		ans.retryAfter = time.Duration(s) * time.Second
	}
	return resp.StatusCode, ans, nil
}

// postAcked posts body through node i until it is acknowledged (201, or
// 200 replayed after an attempt whose outcome was unknown), retrying 503,
// 429 and transport errors with the same request_id; it returns the entry
// id and the final status.
func (c *cluster) postAcked(i int, body map[string]any, within time.Duration) (string, int) {
	c.t.Helper()
	var id string
	var status int
	unknown := false
	attempts := 0
	c.poll(fmt.Sprintf("post %s through %s", body["request_id"], services[i]), within, func() (bool, string) {
		attempts++
		st, ans, err := c.post(i, body)
		switch {
		case err != nil:
			unknown = true
			return false, shortErr(err)
		case st == http.StatusCreated && !ans.Data.Replayed && ans.Data.ID != "":
			id, status = ans.Data.ID, st
			return true, ""
		case st == http.StatusOK && ans.Data.Replayed && unknown:
			id, status = ans.Data.ID, st
			return true, ""
		case st == http.StatusServiceUnavailable || st == http.StatusTooManyRequests:
			unknown = unknown || st == http.StatusServiceUnavailable
			msg := fmt.Sprintf("attempt %d: %d", attempts, st)
			if ans.Error != nil {
				msg += " " + ans.Error.Code + ": " + ans.Error.Message
			}
			if ans.retryAfter > time.Second {
				time.Sleep(min(ans.retryAfter, 5*time.Second) - 500*time.Millisecond)
			}
			return false, msg
		default:
			c.t.Fatalf("post %s through %s: unexpected status %d: %+v", body["request_id"], services[i], st, ans)
			return false, ""
		}
	})
	if attempts > 1 {
		c.logf("  (%d attempts)", attempts)
	}
	return id, status
}

// checkExactlyOnce fails unless ids holds every acknowledged entry exactly
// once and nothing else.
func checkExactlyOnce(t *testing.T, what string, ids []string, acked map[string]string) {
	t.Helper()
	count := map[string]int{}
	for _, id := range ids {
		count[id]++
	}
	for rid, id := range acked {
		if count[id] != 1 {
			t.Errorf("%s: entry %s (request_id %s) listed %d times, want once", what, id, rid, count[id])
		}
	}
	if len(ids) != len(acked) {
		t.Errorf("%s: %d threads listed, %d acknowledged: %v", what, len(ids), len(acked), ids)
	}
}

func question(title string) map[string]any {
	return map[string]any{
		"request_id":      newUUID(),
		"type":            "question",
		"title":           title,
		"body":            "Posted by deploy.TestComposeCluster to check replication across docker containers.",
		"actor":           map[string]any{"name": "deploy-test", "model": "go test"},
		"submission_mode": "autonomous",
	}
}

// findCompose returns the compose command: the v2 plugin if it answers,
// else the standalone docker-compose, else nil.
func findCompose() []string {
	try := func(cmd ...string) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		return exec.CommandContext(ctx, cmd[0], append(cmd[1:], "version")...).Run() == nil
	}
	if try("docker", "compose") {
		return []string{"docker", "compose"}
	}
	if _, err := exec.LookPath("docker-compose"); err == nil && try("docker-compose") {
		return []string{"docker-compose"}
	}
	return nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

func shortErr(err error) string {
	if err == nil {
		return ""
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}
