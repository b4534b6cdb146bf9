package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/testkit"
)

// hashTree returns the SHA-256 of every file under dir, by path.
func hashTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %x\n", path, sha256.Sum256(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The operator's path end to end, with the real binary: a node playing
// the next release (--test-cluster-version-max, one above this release's
// fsm.ClusterVersionMax) is finalized with `restarea admin
// finalize-upgrade`, which `admin status` then shows; stopped and started
// again on this release's binary, it refuses to start with one ERROR line naming both versions, exit
// 1, and its data directory untouched.
func TestFinalizeUpgradeCLIAndStartRefusal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it")
	}
	dir := filepath.Join(t.TempDir(), "data")
	raftAddr, httpAddr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	serve := func(extra ...string) *exec.Cmd {
		args := append([]string{"serve", "--data-dir", dir, "--raft-addr", raftAddr, "--http-addr", httpAddr,
			"--admin-token", testAdminToken, "--log-level", "warn"}, extra...)
		return exec.Command(testkit.Binary(t), args...)
	}
	next, known := strconv.Itoa(fsm.ClusterVersionMax+1), strconv.Itoa(fsm.ClusterVersionMax)
	// Refused without the guard flag.
	if out, err := serve("--test-cluster-version-max", next).CombinedOutput(); !strings.Contains(string(out), "--allow-test-versions") || err == nil {
		t.Fatalf("--test-cluster-version-max without --allow-test-versions: %v\n%s", err, out)
	}
	// Formed at cluster version 1, as by v0.1.0: a new cluster would form
	// at the newest version, with nothing left to finalize.
	cmd := serve("--test-cluster-version-max", next, "--allow-test-versions", "--initial-cluster-version", "1")
	cmd.Env = cleanEnv()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := "http://" + httpAddr
	testkit.WaitOK(t, 30*time.Second, base+"/readyz")
	cli := adminCLI{t: t, env: []string{"RESTAREA_SERVER=" + base, "RESTAREA_ADMIN_TOKEN=" + testAdminToken}}

	out := cli.want(0, "finalize-upgrade")
	if !strings.Contains(out, "cluster version "+next+" (it ran 1)") || !strings.Contains(out, "cluster version: "+next) {
		t.Fatalf("finalize-upgrade printed:\n%s", out)
	}
	out = cli.want(0, "finalize-upgrade")
	if !strings.Contains(out, "nothing to finalize") {
		t.Fatalf("finalize-upgrade again printed:\n%s", out)
	}
	out = cli.want(0, "status")
	if !strings.Contains(out, "CLUSTER_VERSION") || !strings.Contains(out, "CV_MAX") {
		t.Fatalf("status lacks the cluster version columns:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// NODE URL STATE LEADER TERM APPLIED COMMIT LAG LOG_FORMAT CLUSTER_VERSION VERSION REVISION CV_MAX NOTE
	if f := strings.Fields(lines[len(lines)-1]); len(f) < 13 || f[9] != next || f[12] != next {
		t.Fatalf("status row does not show cluster version %s and max %s:\n%s", next, next, out)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	before := hashTree(t, dir)

	bin := testkit.Binary(t) // built before the bound starts: a first build is slow on a busy machine
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old := exec.CommandContext(ctx, bin, "serve", "--data-dir", dir, "--raft-addr", raftAddr, "--http-addr", httpAddr, "--admin-token", testAdminToken)
	old.Env = cleanEnv()
	var stderr bytes.Buffer
	old.Stderr = &stderr
	err := old.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("start of this release on a directory at cluster version %s: %v, want exit 1\n%s", next, err, stderr.String())
	}
	var errorLines []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, `"level":"ERROR"`) {
			errorLines = append(errorLines, l)
		}
	}
	if len(errorLines) != 1 || !strings.Contains(errorLines[0], "cluster runs cluster version "+next) || !strings.Contains(errorLines[0], "knows up to "+known) {
		t.Fatalf("want one ERROR line naming both versions:\n%s", stderr.String())
	}
	if after := hashTree(t, dir); after != before {
		t.Fatalf("the refused start changed the data directory:\nbefore\n%s\nafter\n%s", before, after)
	}
}
