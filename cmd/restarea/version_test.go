package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/testkit"
)

// A release build says what it is: `restarea version` prints the
// stamped version and commit, and the first line `restarea serve` logs
// is "restarea starting" with the version, commit, Go version, os and
// architecture, before anything else.
func TestStampedBuildIdentity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const version, commit = "v1.4.2-rc.1", "c6a03939344b45c9aa971e9385eca294c0dc2199"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "restarea")
	testkit.BuildStamped(ctx, t, bin, version, commit, runtime.GOOS, runtime.GOARCH)

	out, err := exec.CommandContext(ctx, bin, "version").Output()
	want := "restarea " + version + " " + commit + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if err != nil || string(out) != want {
		t.Fatalf("restarea version: %q %v, want %q", out, err, want)
	}

	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, bin, "serve", "--data-dir", filepath.Join(dir, "data"),
		"--http-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	r := bufio.NewReader(stderr)
	line, err := r.ReadString('\n')
	// The rest is drained, so the node never blocks on a full pipe.
	go io.Copy(io.Discard, r)
	if err != nil {
		t.Fatalf("first log line: %q %v", line, err)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(line), &first); err != nil {
		t.Fatalf("first log line is not JSON: %q", line)
	}
	for k, v := range map[string]string{"msg": "restarea starting", "level": "INFO", "version": version, "commit": commit,
		"go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH} {
		if first[k] != v {
			t.Errorf("first log line: %s = %v, want %q (%s)", k, first[k], v, strings.TrimSpace(line))
		}
	}
}
