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
