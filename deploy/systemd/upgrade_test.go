package systemd

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/prevrelease"
	"github.com/restarea/restarea/internal/testkit"
)

// finalizePath is the admin route that raises the cluster's version once
// every member runs the new release (docs/upgrades.md).
const finalizePath = "/api/v1/admin/cluster/finalize-upgrade"

// The upgrade of docs/systemd.md ("Upgrading to a new release") on
// loopback without systemd: three `restarea serve` processes of the
// previous release (RELEASES; built from its commit), configured by the
// unit's Environment= and the previous release's own example environment
// file (its settings, mutual TLS between the nodes), are switched to this
// build one at a time, followers first and the leader last, each stopped
// with SIGTERM (exit 0 within TimeoutStopSec) and started on its data
// directory with the environment unchanged, then waited for on /readyz;
// one node is switched back to the previous release and forward again
// (the rollback before the finalize), then the upgrade is finalized where
// the build has the route. Posts go through every node after each step,
// and at the end every node holds every acknowledged post once.
func TestWalkthroughUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: -short: this test builds the previous release and runs three node processes")
	}
	if runtime.GOOS != "linux" {
		t.Skip("SKIP: the previous release is built as the static linux binary the images carry")
	}
	newBin := testkit.Binary(t)
	rel, oldBin, oldEnv := previousRelease(t)
	// A bound on the walkthrough against a hang, started once both builds
	// are done: building the previous release on a busy machine takes
	// minutes of its own.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		out, err := exec.CommandContext(ctx, oldBin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("restarea %s %v: %v\n%s", rel.Version, args, err, out)
		}
	}
	// The files as the previous release's walkthrough made them.
	run("tls", "ca", "--out", filepath.Join(root, "ca"))
	for i := 1; i <= 3; i++ {
		run("tls", "node", "--ca-dir", filepath.Join(root, "ca"), "--name", fmt.Sprintf("node%d", i),
			"--host", "127.0.0.1", "--host", "localhost", "--out", filepath.Join(root, fmt.Sprintf("node%d", i)))
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	secretFile := filepath.Join(root, "cluster-secret")
	tokenFile := filepath.Join(root, "admin-token")
	token := make([]byte, 24)
	rand.Read(token)
	for f, b := range map[string][]byte{secretFile: secret, tokenFile: token} {
		if err := os.WriteFile(f, []byte(base64.StdEncoding.EncodeToString(b)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	adminToken := base64.StdEncoding.EncodeToString(token)

	example := envAssignments(t, oldEnv)
	unitEnv := map[string]string{}
	for _, kv := range parseUnit(t, unitFile)["Service"]["Environment"] {
		k, v, _ := strings.Cut(kv, "=")
		unitEnv[k] = v
	}
	var httpAddrs, raftAddrs, join []string
	for range 3 {
		httpAddrs, raftAddrs = append(httpAddrs, testkit.FreeAddr(t)), append(raftAddrs, testkit.FreeAddr(t))
		join = append(join, "http://"+httpAddrs[len(httpAddrs)-1])
	}
	envs := make([][]string, 3)
	for i := range 3 {
		name := fmt.Sprintf("node%d", i+1)
		dir := filepath.Join(root, name)
		vars := machineEnv(t, unitEnv, example, map[string]string{
			"RESTAREA_DATA_DIR":            filepath.Join(root, "state-"+name),
			"RESTAREA_NODE_ID":             name,
			"RESTAREA_HTTP_ADDR":           httpAddrs[i],
			"RESTAREA_ADVERTISE_URL":       "http://" + httpAddrs[i],
			"RESTAREA_RAFT_ADDR":           raftAddrs[i],
			"RESTAREA_JOIN":                strings.Join(join, ","),
			"RESTAREA_CLUSTER_SECRET_FILE": secretFile,
			"RESTAREA_TLS_CERT":            filepath.Join(dir, name+".pem"),
			"RESTAREA_TLS_KEY":             filepath.Join(dir, name+"-key.pem"),
			"RESTAREA_TLS_CA":              filepath.Join(dir, "ca.pem"),
		}, rel.Version+"'s example")
		// The example leaves the admin API off; the upgrade needs it.
		vars["RESTAREA_ADMIN_TOKEN_FILE"] = tokenFile
		for k, v := range vars {
			envs[i] = append(envs[i], k+"="+v)
		}
	}

	procs := make([]*proc, 3)
	t.Cleanup(func() {
		for _, p := range procs {
			if p != nil {
				p.cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			for _, p := range procs {
				if p != nil {
					t.Logf("--- %s stderr:\n%s", p.name, p.log.String())
				}
			}
		}
	})
	start := func(i int, bin string) {
		t.Helper()
		cmd := exec.Command(bin, "serve")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "RESTAREA_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, envs[i]...)
		p := &proc{name: fmt.Sprintf("node%d", i+1), url: "http://" + httpAddrs[i], cmd: cmd, log: &testkit.SyncBuffer{}, done: make(chan error, 1)}
		if old := procs[i]; old != nil {
			p.log.Write([]byte(old.log.String())) // one log per machine, as journald keeps it
		}
		cmd.Stderr = p.log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- cmd.Wait() }()
		procs[i] = p
	}
	leader := func() string {
		t.Helper()
		var id string
		testkit.Eventually(t, 60*time.Second, "every node ready, three voters and one leader", func() error {
			id = ""
			for _, p := range procs {
				var st struct {
					LeaderID string `json:"leader_id"`
					Members  []struct {
						ID string `json:"id"`
					} `json:"members"`
				}
				code, _ := getJSON(p.url+"/readyz", nil)
				sc, err := getJSON(p.url+"/api/v1/cluster", &st)
				if code != 200 || err != nil || sc != 200 || len(st.Members) != 3 || st.LeaderID == "" || (id != "" && st.LeaderID != id) {
					return fmt.Errorf("%s: readyz %d, cluster %d %v %+v", p.name, code, sc, err, st)
				}
				id = st.LeaderID
			}
			return nil
		})
		return id
	}
	acked := map[string]bool{}
	postAll := func(step string) {
		t.Helper()
		for _, p := range procs {
			id, err := postQuestion(p.url, step+", through "+p.name)
			if err != nil {
				t.Fatalf("%s: post through %s: %v", step, p.name, err)
			}
			acked[id] = true
		}
	}
	stopTimeout, _ := parseSeconds(mustGet(t, parseUnit(t, unitFile), "Service", "TimeoutStopSec"))
	// systemctl restart: SIGTERM, the exit (status 0 within
	// TimeoutStopSec, or systemd counts a failure), then ExecStart again,
	// now of whatever binary the path holds.
	restart := func(i int, bin, to string) {
		t.Helper()
		p := procs[i]
		began := time.Now()
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.done:
			if err != nil {
				t.Fatalf("%s exited with %v after SIGTERM; systemd would count that as a failure", p.name, err)
			}
		case <-time.After(stopTimeout):
			t.Fatalf("%s did not stop within TimeoutStopSec=%v", p.name, stopTimeout)
		}
		stopped := time.Since(began)
		start(i, bin)
		l := leader()
		t.Logf("%s: stopped %v after SIGTERM, started on %s, ready after %v in all; leader %s",
			p.name, stopped.Round(time.Millisecond), to, time.Since(began).Round(time.Millisecond), l)
		postAll(p.name + " on " + to)
	}

	for i := range 3 {
		start(i, oldBin)
	}
	first := leader()
	t.Logf("three nodes of %s with its example's settings; leader %s", rel.Version, first)
	postAll("on " + rel.Version)

	// Followers first, the leader last.
	var order []int
	for i, p := range procs {
		if p.name != first {
			order = append(order, i)
		}
	}
	for i, p := range procs {
		if p.name == first {
			order = append(order, i)
		}
	}
	for _, i := range order {
		restart(i, newBin, "this build")
	}
	// Before the finalize, one node back to the previous release and
	// forward again.
	restart(order[0], oldBin, rel.Version)
	restart(order[0], newBin, "this build")

	// restarea admin finalize-upgrade: asked of the nodes in turn; no
	// answer, 409 (a member not yet seen on the new release) and 503 are
	// asked again.
	hc := &http.Client{Timeout: 10 * time.Second}
	status, try := 0, 0
	err := testkit.Poll(ctx, 30*time.Second, func() error {
		p := procs[try%len(procs)]
		try++
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url+finalizePath, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		status = resp.StatusCode
		if status == http.StatusConflict || status == http.StatusServiceUnavailable {
			return fmt.Errorf("POST %s on %s: %d", finalizePath, p.name, status)
		}
		return nil
	})
	switch {
	case err != nil:
		t.Fatal(err)
	case status == http.StatusOK:
		t.Logf("finalized")
		postAll("finalized")
	case status == http.StatusNotFound:
		t.Logf("finalize not available in this tree (POST %s answers 404): the step is skipped", finalizePath)
	default:
		t.Fatalf("POST %s: %d", finalizePath, status)
	}

	leader()
	for _, p := range procs {
		ids := map[string]int{}
		testkit.Eventually(t, 30*time.Second, p.name+" holds every acknowledged post", func() error {
			ids = map[string]int{}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/api/v1/admin/entries?limit=100", nil)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+adminToken)
			var page struct {
				Data struct {
					Entries []struct {
						ID string `json:"id"`
					} `json:"entries"`
				} `json:"data"`
			}
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
				return err
			}
			for _, e := range page.Data.Entries {
				ids[e.ID]++
			}
			for id := range acked {
				if ids[id] != 1 {
					return fmt.Errorf("%s listed %d times", id, ids[id])
				}
			}
			return nil
		})
		if len(ids) != len(acked) {
			t.Errorf("%s holds %d entries, want the %d acknowledged", p.name, len(ids), len(acked))
		}
	}
	t.Logf("%d posts acknowledged across the upgrade, each held once by every node", len(acked))
}

// previousRelease returns the release an upgrade to this tree starts
// from (testkit.PreviousRelease: built once, cached in bin/), its binary
// and the example environment file it shipped, read from its commit.
func previousRelease(t *testing.T) (prevrelease.Release, string, string) {
	t.Helper()
	rel, bin := testkit.PreviousRelease(t)
	cmd := exec.Command("git", "show", rel.Commit+":deploy/systemd/restarea.env")
	cmd.Dir = testkit.ModuleRoot()
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s's deploy/systemd/restarea.env: %v", rel.Version, err)
	}
	env := filepath.Join(t.TempDir(), "restarea.env")
	if err := os.WriteFile(env, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return rel, bin, env
}
