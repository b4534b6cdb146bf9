package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A production node never runs a test clock by accident: the offset file
// is refused without --allow-test-clock, and a bad offset is refused too.
func TestServeRefusesTestClockWithoutAllow(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "offset")
	os.WriteFile(file, []byte("8760h\n"), 0o600)
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("a year\n"), 0o600)
	base := []string{"--data-dir", filepath.Join(dir, "data"), "--http-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0", "--log-level", "error"}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no allow flag", []string{"--test-clock-offset-file", file}},
		{"bad offset", []string{"--test-clock-offset-file", bad, "--allow-test-clock"}},
		{"zero tolerance", []string{"--clock-tolerance", "0s"}},
		{"test boot id without allow flag", []string{"--test-boot-id-file", file}},
		{"empty test boot id", []string{"--test-boot-id-file", filepath.Join(dir, "missing"), "--allow-test-boot-id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runServe(append(append([]string{}, base...), tc.args...)); got != 2 {
				t.Fatalf("exit %d, want 2", got)
			}
		})
	}
}

// The offset clock follows its file: missing or empty is real time, a
// duration moves it, a rename takes effect within offsetReread.
func TestOffsetClock(t *testing.T) {
	file := filepath.Join(t.TempDir(), "offset")
	c, err := newOffsetClock(file)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(c.Now()); d > time.Second || d < -time.Second {
		t.Fatalf("missing file: offset %v", d)
	}
	os.WriteFile(file, []byte("8760h\n"), 0o600)
	time.Sleep(offsetReread + 10*time.Millisecond)
	if d := time.Until(c.Now()); d < 8759*time.Hour {
		t.Fatalf("after writing 8760h: offset %v", d)
	}
	os.WriteFile(file, []byte(""), 0o600)
	time.Sleep(offsetReread + 10*time.Millisecond)
	if d := time.Until(c.Now()); d > time.Second {
		t.Fatalf("after emptying the file: offset %v", d)
	}
}
