package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A rolling restart needs a target that can restart nodes gracefully;
// contradictory flags are usage errors, found before anything starts.
func TestChaosRollingRestartUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--local", "3", "--rolling-restart", "--no-faults"},
		{"--nodes", "http://127.0.0.1:1", "--rolling-restart"},
	} {
		if code := runChaos(args); code != 2 {
			t.Errorf("restarea chaos %v: exit %d, want 2", args, code)
		}
	}
}

// The fault classes and the soak bounds are checked before anything
// starts too.
func TestChaosFaultFlagsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--local", "3", "--faults", "kill,,pause"},
		{"--local", "3", "--faults", "membership", "--no-faults"},
		{"--local", "3", "--faults", "membership", "--rolling-restart"},
		{"--nodes", "http://127.0.0.1:1", "--faults", "kill"},
		{"--local", "3", "--fault-interval", "-1s"},
		{"--local", "3", "--min-ops", "-1"},
		{"--local", "3", "--duration", "10m", "--min-faults", "5", "--max-duration", "5m"},
	} {
		if code := runChaos(args); code != 2 {
			t.Errorf("restarea chaos %v: exit %d, want 2", args, code)
		}
	}
}

// The upgrade flags are checked before anything starts: --upgrade-from
// needs --local and an executable, its companions need it, and it
// excludes the other fault modes.
func TestChaosUpgradeUsage(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(t.TempDir(), "restarea")
	if err := os.WriteFile(notExec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--local", "3", "--finalize"},
		{"--local", "3", "--downgrade-one"},
		{"--local", "3", "--upgrade-to", exe},
		{"--nodes", "http://127.0.0.1:1", "--upgrade-from", exe},
		{"--local", "3", "--upgrade-from", exe, "--rolling-restart"},
		{"--local", "3", "--upgrade-from", exe, "--faults", "kill"},
		{"--local", "3", "--upgrade-from", exe, "--no-faults"},
		{"--local", "3", "--upgrade-from", filepath.Join(t.TempDir(), "missing")},
		{"--local", "3", "--upgrade-from", notExec},
		{"--local", "3", "--upgrade-from", exe, "--upgrade-to", t.TempDir()},
	} {
		if code := runChaos(args); code != 2 {
			t.Errorf("restarea chaos %v: exit %d, want 2", args, code)
		}
	}
}

// The plan of valid flags: absolute paths, the running binary as the
// default --upgrade-to, --finalize and --downgrade-one carried over.
func TestUpgradePlan(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if p, msg := upgradePlan("", "", false, false, true, false); p != nil || msg != "" {
		t.Errorf("no upgrade: %+v %q", p, msg)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, exe)
	if err != nil {
		t.Fatal(err)
	}
	p, msg := upgradePlan(rel, "", true, true, true, false)
	if msg != "" {
		t.Fatal(msg)
	}
	if p.From != exe || p.To != exe || !p.Finalize || !p.DowngradeOne {
		t.Errorf("plan %+v, want from and to %s, finalize and downgrade-one", p, exe)
	}
	if _, msg := upgradePlan(filepath.Join(t.TempDir(), "missing"), "", false, false, true, false); !strings.Contains(msg, "--upgrade-from") {
		t.Errorf("a missing binary: %q does not name the flag", msg)
	}
}
