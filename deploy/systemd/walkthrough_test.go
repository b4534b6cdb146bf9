package systemd

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/testkit"
)

// envAssignments reads KEY=VALUE lines the way systemd's EnvironmentFile
// does for this example (no quotes are used in it).
func envAssignments(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		if strings.ContainsAny(v, `"'\`) {
			t.Fatalf("%s: %s: quoting is not used in the example", path, k)
		}
		env[k] = v
	}
	return env
}

type proc struct {
	name, url string
	cmd       *exec.Cmd
	log       *testkit.SyncBuffer
	done      chan error
}

// walkRoots are the roots the walkthrough's requests trust: the CA its
// nodes' public ports serve certificates of (nil: the system's).
var walkRoots *x509.CertPool

func walkTransport() *http.Transport {
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: walkRoots}}
}

func getJSON(url string, out any) (int, error) {
	c := http.Client{Timeout: 3 * time.Second, Transport: walkTransport()}
	r, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	defer r.Body.Close()
	if out != nil {
		err = json.NewDecoder(r.Body).Decode(&struct {
			Data any `json:"data"`
		}{out})
	}
	return r.StatusCode, err
}

func postQuestion(url, title string) (string, error) {
	body := fmt.Sprintf(`{"request_id":%q,"type":"question","title":%q,"body":"b","actor":{"name":"systemd-test"},"submission_mode":"autonomous"}`,
		newRequestID(), title)
	// Bounded: 30 s in all, enough for an election and a few 503s.
	c := http.Client{Timeout: 5 * time.Second, Transport: walkTransport()}
	var id string
	var refused error
	err := testkit.Poll(context.Background(), 30*time.Second, func() error {
		r, err := c.Post(url+"/api/v1/entries", "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		var out struct {
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		raw, _ := io.ReadAll(r.Body)
		r.Body.Close()
		json.Unmarshal(raw, &out)
		switch r.StatusCode {
		case 200, 201:
			id = out.Data.ID
			return nil
		case http.StatusServiceUnavailable:
			return fmt.Errorf("%d %s", r.StatusCode, raw)
		}
		refused = fmt.Errorf("%d %s", r.StatusCode, raw)
		return nil
	})
	if refused != nil {
		return "", refused
	}
	return id, err
}

func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// The walkthrough, on loopback without systemd: `restarea tls` makes the
// CA and three node certificates, the secret is a file, and each of three
// `restarea serve` processes is configured only by the unit's Environment=
// and an environment file in the example's form (addresses moved to
// loopback ports, paths to a temporary directory). They form a cluster
// over mutual TLS, their public ports over HTTPS; SIGTERM stops the leader within TimeoutStopSec, exit
// status 0, and the other two elect a leader and keep taking writes.
func TestWalkthroughOnLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: -short: this test runs three node processes")
	}
	bin := testkit.Binary(t)
	root := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("restarea %v: %v\n%s", args, err, out)
		}
	}
	run("tls", "ca", "--out", filepath.Join(root, "ca"))
	for i := 1; i <= 3; i++ {
		run("tls", "node", "--ca-dir", filepath.Join(root, "ca"), "--name", fmt.Sprintf("node%d", i),
			"--host", "127.0.0.1", "--host", "localhost", "--out", filepath.Join(root, fmt.Sprintf("node%d", i)))
	}
	// One HTTPS certificate for the three public ports (on one machine
	// here, at one address).
	httpDir := filepath.Join(root, "http")
	run("tls", "http", "--ca-dir", filepath.Join(root, "ca"), "--name", "http", "--host", "127.0.0.1", "--out", httpDir)
	caPEM, err := os.ReadFile(filepath.Join(httpDir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	walkRoots = x509.NewCertPool()
	walkRoots.AppendCertsFromPEM(caPEM)
	t.Cleanup(func() { walkRoots = nil })
	secret := make([]byte, 32)
	rand.Read(secret)
	secretFile := filepath.Join(root, "cluster-secret")
	if err := os.WriteFile(secretFile, []byte(base64.StdEncoding.EncodeToString(secret)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	example := envAssignments(t, envFile)
	unitEnv := map[string]string{}
	for _, kv := range parseUnit(t, unitFile)["Service"]["Environment"] {
		k, v, _ := strings.Cut(kv, "=")
		unitEnv[k] = v
	}
	httpAddrs, raftAddrs := make([]string, 3), make([]string, 3)
	var join []string
	for i := range 3 {
		httpAddrs[i], raftAddrs[i] = testkit.FreeAddr(t), testkit.FreeAddr(t)
		join = append(join, "https://"+httpAddrs[i])
	}

	var procs []*proc
	t.Cleanup(func() {
		for _, p := range procs {
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			for _, p := range procs {
				t.Logf("--- %s stderr:\n%s", p.name, p.log.String())
			}
		}
	})
	for i := range 3 {
		name := fmt.Sprintf("node%d", i+1)
		dir := filepath.Join(root, name)
		vars := machineEnv(t, unitEnv, example, map[string]string{
			"RESTAREA_DATA_DIR":            filepath.Join(root, "state-"+name),
			"RESTAREA_NODE_ID":             name,
			"RESTAREA_HTTP_ADDR":           httpAddrs[i],
			"RESTAREA_ADVERTISE_URL":       "https://" + httpAddrs[i],
			"RESTAREA_RAFT_ADDR":           raftAddrs[i],
			"RESTAREA_JOIN":                strings.Join(join, ","),
			"RESTAREA_CLUSTER_SECRET_FILE": secretFile,
			"RESTAREA_TLS_CERT":            filepath.Join(dir, name+".pem"),
			"RESTAREA_TLS_KEY":             filepath.Join(dir, name+"-key.pem"),
			"RESTAREA_TLS_CA":              filepath.Join(dir, "ca.pem"),
			"RESTAREA_HTTP_TLS_CERT":       filepath.Join(httpDir, "http.pem"),
			"RESTAREA_HTTP_TLS_KEY":        filepath.Join(httpDir, "http-key.pem"),
			"RESTAREA_HTTP_TLS_CA":         filepath.Join(httpDir, "ca.pem"),
		}, "the example")
		cmd := exec.Command(bin, "serve")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "RESTAREA_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		for k, v := range vars {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		p := &proc{name: name, url: "https://" + httpAddrs[i], cmd: cmd, log: &testkit.SyncBuffer{}, done: make(chan error, 1)}
		cmd.Stderr = p.log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- cmd.Wait() }()
		procs = append(procs, p)
	}

	status := func(p *proc) (st struct {
		LeaderID string `json:"leader_id"`
		Members  []struct {
			ID string `json:"id"`
		} `json:"members"`
	}, ok bool) {
		code, err := getJSON(p.url+"/api/v1/cluster", &st)
		return st, err == nil && code == 200
	}
	for _, p := range procs {
		testkit.Eventually(t, 60*time.Second, p.name+" in a three-member cluster with a leader", func() error {
			select {
			case err := <-p.done:
				t.Fatalf("%s exited: %v", p.name, err)
			default:
			}
			code, _ := getJSON(p.url+"/readyz", nil)
			st, ok := status(p)
			if code == 200 && ok && len(st.Members) == 3 && st.LeaderID != "" {
				return nil
			}
			return fmt.Errorf("readyz %d, status %+v", code, st)
		})
	}
	st, _ := status(procs[1])
	var leader *proc
	for _, p := range procs {
		if p.name == st.LeaderID {
			leader = p
		}
	}
	if leader == nil {
		t.Fatalf("leader %q is none of the nodes", st.LeaderID)
	}
	if _, err := postQuestion(procs[2].url, "over the systemd walkthrough"); err != nil {
		t.Fatalf("post: %v", err)
	}

	// systemctl stop: SIGTERM, then SIGKILL after TimeoutStopSec.
	stopTimeout, _ := parseSeconds(mustGet(t, parseUnit(t, unitFile), "Service", "TimeoutStopSec"))
	began := time.Now()
	leader.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-leader.done:
		leader.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("the leader exited with %v after SIGTERM; systemd would count that as a failure", err)
		}
	case <-time.After(stopTimeout):
		t.Fatalf("the leader did not stop within TimeoutStopSec=%v", stopTimeout)
	}
	t.Logf("the leader %s stopped %v after SIGTERM (TimeoutStopSec=%v)", leader.name, time.Since(began).Round(time.Millisecond), stopTimeout)
	if !strings.Contains(leader.log.String(), "handed leadership over") {
		t.Errorf("the leader did not hand leadership over before stopping")
	}
	for _, p := range procs {
		if p != leader {
			if _, err := postQuestion(p.url, "after the leader stopped, through "+p.name); err != nil {
				t.Fatalf("post through %s after the leader stopped: %v", p.name, err)
			}
		}
	}
}

func mustGet(t *testing.T, u unit, section, key string) string {
	t.Helper()
	v, ok := u.get(section, key)
	if !ok {
		t.Fatalf("[%s] %s is not set", section, key)
	}
	return v
}

// machineEnv is one machine's environment in systemd's order: the unit's
// Environment= first, then the example EnvironmentFile=, then what differs
// per machine. Each of those must be a variable the example sets, so that
// the walkthrough changes only lines an operator finds in the file.
func machineEnv(t *testing.T, unitEnv, example, perMachine map[string]string, exampleName string) map[string]string {
	t.Helper()
	vars := map[string]string{}
	for k, v := range unitEnv {
		vars[k] = v
	}
	for k, v := range example {
		vars[k] = v
	}
	for k, v := range perMachine {
		if _, ok := vars[k]; !ok {
			t.Fatalf("%s does not set %s, which the walkthrough changes per machine", exampleName, k)
		}
		vars[k] = v
	}
	return vars
}
