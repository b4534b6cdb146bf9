package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/restarea/restarea/internal/testkit"
)

// A production node never announces test protocol versions by accident:
// --test-protocol-versions is refused without --allow-test-versions, and
// a malformed range is refused naming the flag; both before the node
// opens a port.
func TestServeRefusesTestVersionsWithoutAllow(t *testing.T) {
	dir := t.TempDir()
	base := []string{"serve", "--data-dir", filepath.Join(dir, "data"), "--http-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0", "--log-level", "error"}
	for _, tc := range []struct {
		name string
		args []string
		says string
	}{
		{"no allow flag", []string{"--test-protocol-versions", "3-4"}, "--test-protocol-versions makes this node announce raft-port protocol versions it does not speak, for tests; it is refused without --allow-test-versions"},
		{"min above max", []string{"--test-protocol-versions", "4-3", "--allow-test-versions"}, "--test-protocol-versions: protocol versions 4-3: the minimum is above the maximum"},
		{"version 0", []string{"--test-protocol-versions", "0-2", "--allow-test-versions"}, "--test-protocol-versions: protocol versions 0-2: version 0 does not exist"},
		{"not a range", []string{"--test-protocol-versions", "two", "--allow-test-versions"}, `--test-protocol-versions: protocol versions "two": want MIN-MAX`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(testkit.Binary(t), append(append([]string{}, base...), tc.args...)...)
			cmd.Env = cleanEnv()
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if err == nil || !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit: %v; want status 2\n%s", err, out)
			}
			// The refusal is a JSON log line: its text is the err attribute.
			var line struct{ Err string }
			json.Unmarshal(bytes.TrimSpace(out), &line)
			if !strings.Contains(line.Err, tc.says) {
				t.Fatalf("output lacks %q:\n%s", tc.says, out)
			}
		})
	}
}
