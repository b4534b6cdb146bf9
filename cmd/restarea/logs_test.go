package main

import (
	"context"
	"encoding/json"
	"fmt"
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

// Every line `restarea serve` writes on stderr — starting, the probes
// while it starts, a post, an MCP call, SIGTERM — and every line of a
// successful `restarea restore` is a JSON object with time, level and
// msg; the MCP call adds no INFO lines, the probes no warnings, and the
// restore none at all.
func TestServeAndRestoreLogOnlyJSON(t *testing.T) {
	const token = "logs-test-admin-token-0123456789"
	bin := testkit.Binary(t) // built before the bound starts: a first build is slow on a busy machine
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	httpAddr := testkit.FreeAddr(t)
	base := "http://" + httpAddr
	var serveErr testkit.SyncBuffer
	cmd := exec.CommandContext(ctx, bin, "serve", "--data-dir", filepath.Join(dir, "data"),
		"--http-addr", httpAddr, "--raft-addr", testkit.FreeAddr(t), "--admin-token", token)
	cmd.Env, cmd.Stderr = cleanEnv(), &serveErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	// The probe starts at once: the node answers 503 until it is ready.
	testkit.WaitOK(t, 30*time.Second, base+"/readyz")
	if r, _, code := testkit.PostEntry(t, base, testkit.Question("Which lines does a node log?")); r.Status != http.StatusCreated {
		t.Fatalf("post: %d %s\n%s", r.Status, code, r.Body)
	}
	before := len(lines(serveErr.String()))
	call := testkit.Do(t, nil, http.MethodPost, base+"/mcp",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"new_request_id","arguments":{}}}`,
		"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2025-06-18")
	if call.Status != http.StatusOK || !strings.Contains(call.Body, "request_id") {
		t.Fatalf("MCP call: %d %s", call.Status, call.Body)
	}
	backup := testkit.Do(t, nil, http.MethodGet, base+"/api/v1/admin/backup", "", "Authorization", "Bearer "+token)
	if backup.Status != http.StatusOK {
		t.Fatalf("backup: %d %s", backup.Status, backup.Body)
	}
	backupFile := filepath.Join(dir, "backup.db")
	if err := os.WriteFile(backupFile, []byte(backup.Body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, serveErr.String())
	}
	serveLines := lines(serveErr.String())
	checkJSONLines(t, "serve", serveLines)
	for _, l := range serveLines[before:] {
		if m := decodeLine(l); m != nil && m["level"] == "INFO" && strings.HasPrefix(fmt.Sprint(m["msg"]), "server ") {
			t.Errorf("serve: the MCP call logged at INFO: %s", l)
		}
	}
	for _, l := range serveLines {
		if m := decodeLine(l); m != nil && m["path"] == "/readyz" && m["level"] != "DEBUG" {
			t.Errorf("serve: a probe of a starting node logged above DEBUG: %s", l)
		}
	}

	code, out, restoreErr := run(t, "restore", "--from", backupFile, "--data-dir", filepath.Join(dir, "restored"), "--raft-addr", testkit.FreeAddr(t))
	if code != 0 {
		t.Fatalf("restore exited %d: %s\n%s", code, out, restoreErr)
	}
	restoreLines := lines(restoreErr)
	checkJSONLines(t, "restore", restoreLines)
	for _, l := range restoreLines {
		if m := decodeLine(l); m != nil && m["level"] != "INFO" && m["level"] != "DEBUG" {
			t.Errorf("restore succeeded but logged: %s", l)
		}
	}
}

// lines splits a log into its lines, without the empty one after the
// last newline.
func lines(log string) []string {
	if log = strings.TrimSuffix(log, "\n"); log == "" {
		return nil
	}
	return strings.Split(log, "\n")
}

// decodeLine is a log line's JSON object, or nil.
func decodeLine(l string) map[string]any {
	var m map[string]any
	if json.Unmarshal([]byte(l), &m) != nil {
		return nil
	}
	return m
}

// checkJSONLines fails the test for every line that is not a JSON object
// with time, level and msg.
func checkJSONLines(t *testing.T, what string, ls []string) {
	t.Helper()
	if len(ls) == 0 {
		t.Errorf("%s: no log lines", what)
	}
	for _, l := range ls {
		m := decodeLine(l)
		if m == nil {
			t.Errorf("%s: not a JSON object: %q", what, l)
			continue
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := m[k].(string); !ok {
				t.Errorf("%s: no %s: %s", what, k, l)
			}
		}
	}
}
