package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's old example token "T" was guessed in 56 tries: a node
// refuses to start with a token under 16 bytes, from the flag or the file.
func TestServeRefusesShortAdminToken(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("T\n"), 0o600)
	base := []string{"--data-dir", filepath.Join(dir, "data"), "--http-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0", "--log-level", "error"}
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"flag", []string{"--admin-token", "T"}, 1},
		{"15 bytes", []string{"--admin-token", strings.Repeat("x", 15)}, 1},
		{"file", []string{"--admin-token-file", short}, 1},
		{"flag and file", []string{"--admin-token", strings.Repeat("x", 20), "--admin-token-file", short}, 2},
		{"missing file", []string{"--admin-token-file", filepath.Join(dir, "none")}, 2},
		{"ipv6 prefix 0", []string{"--ipv6-source-prefix", "0"}, 2},
		{"ipv6 prefix 129", []string{"--ipv6-source-prefix", "129"}, 2},
		{"no connections", []string{"--max-connections", "0"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runServe(append(append([]string{}, base...), tc.args...)); got != tc.want {
				t.Fatalf("exit %d, want %d", got, tc.want)
			}
		})
	}
}

func TestLoadSecretFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "token")
	os.WriteFile(f, []byte("  0123456789abcdef-token \n"), 0o600)
	got, err := loadSecret("admin-token", "", f)
	if err != nil || string(got) != "0123456789abcdef-token" {
		t.Fatalf("loadSecret = %q, %v", got, err)
	}
	if _, err := loadSecret("admin-token", "x", f); err == nil || !strings.Contains(err.Error(), "--admin-token-file") {
		t.Fatalf("flag and file: %v", err)
	}
}
