package main

import "testing"

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
