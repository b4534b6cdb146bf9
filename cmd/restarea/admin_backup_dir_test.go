package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

func TestBackupNames(t *testing.T) {
	at := time.Date(2026, 12, 5, 7, 30, 0, 123456789, time.FixedZone("CET", 3600))
	if got := backupName(at, 1); got != "restarea-20261205T063000.123Z.db" {
		t.Fatalf("backupName = %q", got)
	}
	if got := backupName(at, 2); got != "restarea-20261205T063000.123Z_2.db" {
		t.Fatalf("backupName seq 2 = %q", got)
	}
	for _, name := range []string{
		"restarea-20261205T063000Z.db", "restarea-20261205T063000.123Z_0.db", "restarea-20261205T063000.123Z.db.tmp",
		".restarea.tmp-123", "restarea-20261305T063000.123Z.db", "xrestarea-20261205T063000.123Z.db", "notes.txt",
	} {
		if _, ok := parseBackupName(name); ok {
			t.Errorf("%q taken for a backup", name)
		}
	}

	// Pruning keeps the newest N by time (then by suffix), leaves every
	// other file alone, and never removes the backup just written.
	dir := t.TempDir()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	names := []string{
		backupName(base.Add(2*time.Hour), 1),
		backupName(base, 1),
		backupName(base.Add(time.Hour), 2),
		backupName(base.Add(time.Hour), 1),
		"notes.txt", "restarea-latest.db", ".restarea.tmp-1",
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, backupName(base.Add(-time.Hour), 1)), 0o700); err != nil {
		t.Fatal(err)
	}
	// Written just now with the clock set back: the oldest name, still kept.
	newest := names[1]
	removed, err := pruneBackups(dir, 2, newest)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{names[3], names[2]}; !slices.Equal(removed, want) {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	left, _ := os.ReadDir(dir)
	var got []string
	for _, e := range left {
		got = append(got, e.Name())
	}
	want := []string{".restarea.tmp-1", "notes.txt", backupName(base.Add(-time.Hour), 1), names[1], names[0], "restarea-latest.db"}
	if !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
}

// A server that sends something other than a state file: the command
// fails, and nothing is left in the directory.
func TestBackupDirRefusesBadBackup(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("not a bbolt file ", 1000)))
	}))
	defer srv.Close()
	dir := t.TempDir()
	cli := adminCLI{t: t}
	code, _, errOut := cli.run("backup", "--dir", dir, "--keep", "1", "--server", srv.URL, "--admin-token", testAdminToken)
	if code != adminRefused || !strings.Contains(errOut, "not a readable state file") {
		t.Fatalf("exit %d, want %d: %s", code, adminRefused, errOut)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left in the directory: %v", left)
	}
}

// The scheduled form as a timer runs it, three times with --keep 2: two
// backups are kept, the newest, and each restores into a node that serves
// the posts. The runs also give the common flags before the command and
// after it.
func TestBackupDirKeepRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, starts a node and serves two restored ones")
	}
	src := testnode.Start(t, testnode.WithAdminToken(testAdminToken))
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(testAdminToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := adminCLI{t: t}
	dir := t.TempDir()
	meta := restarea.PostMeta{Source: "192.0.2.10", Channel: restarea.ChannelHTTP}
	post := func(title string) (restarea.PostRequest, string) {
		req := testkit.Question(title)
		res, err := src.Post(context.Background(), req, meta)
		if err != nil {
			t.Fatal(err)
		}
		return req, res.Entry.ID
	}
	backup := func(args ...string) backupDirResult {
		var res backupDirResult
		cli.json(&res, args...)
		if filepath.Dir(res.File) != dir || res.Bytes <= 0 {
			t.Fatalf("backup %v: %+v", args, res)
		}
		if _, err := fsm.CheckStateFile(res.File); err != nil {
			t.Fatalf("backup %s: %v", res.File, err)
		}
		return res
	}

	req1, id1 := post("in every backup")
	first := backup("--server", src.URL(), "--admin-token-file", tokenFile, "backup", "--dir", dir, "--keep", "2")
	req2, id2 := post("after the first backup")
	second := backup("backup", "--dir", dir, "--keep", "2", "--server", src.URL(), "--admin-token-file", tokenFile)
	third := backup("--server", src.URL(), "backup", "--admin-token-file", tokenFile, "--dir", dir, "--keep", "2")
	if len(first.Removed)+len(second.Removed) != 0 || !slices.Equal(third.Removed, []string{filepath.Base(first.File)}) {
		t.Fatalf("removed: %v, %v, %v; want only the first backup, by the third run", first.Removed, second.Removed, third.Removed)
	}
	kept, err := listBackups(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 2 || kept[0].name != filepath.Base(second.File) || kept[1].name != filepath.Base(third.File) {
		t.Fatalf("kept %+v, want %s and %s", kept, second.File, third.File)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("the directory holds %d files, want the 2 backups", len(ents))
	}

	for _, b := range kept {
		data := filepath.Join(t.TempDir(), "restored")
		raftAddr := testkit.FreeAddr(t)
		if code, out, errOut := run(t, "restore", "--from", filepath.Join(dir, b.name), "--data-dir", data, "--raft-addr", raftAddr); code != 0 {
			t.Fatalf("restore %s exited %d: %s %s", b.name, code, out, errOut)
		}
		base := serveDataDir(t, data, raftAddr, testkit.FreeAddr(t))
		wantReplay(t, base, req1, id1)
		wantReplay(t, base, req2, id2)
	}
}

// backupDirResult is the JSON `admin backup --dir` prints.
type backupDirResult struct {
	File    string   `json:"file"`
	Bytes   int64    `json:"bytes"`
	Removed []string `json:"removed"`
}

// The common flags are taken before the command as after it; a command's
// own flag before it is a usage error, and so are flags without a command.
func TestAdminFlagsBeforeCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts a node")
	}
	n := testnode.Start(t, testnode.WithAdminToken(testAdminToken))
	cli := adminCLI{t: t}
	var before, after restarea.Settings
	cli.json(&before, "--server", n.URL(), "--admin-token", testAdminToken, "settings", "get")
	cli.json(&after, "settings", "get", "--server", n.URL(), "--admin-token", testAdminToken)
	if before != after {
		t.Fatalf("settings get: %+v before, %+v after", before, after)
	}
	for _, args := range [][]string{
		{"--server", n.URL(), "--admin-token", testAdminToken, "-v", "status"},
		{"status", "--server", n.URL(), "--admin-token", testAdminToken, "-v"},
		{"--server=" + n.URL(), "status", "--admin-token", testAdminToken},
		{"--server", n.URL(), "--admin-token", testAdminToken, "--", "status"},
	} {
		if out := cli.want(0, args...); !strings.Contains(out, n.ID()) {
			t.Fatalf("admin %v: %s", args, out)
		}
	}
	if code, _, errOut := cli.run("--server", n.URL(), "--admin-token", testAdminToken, "--yes", "members", "remove", "x"); code != adminUsage || !strings.Contains(errOut, "put a command's own flags after it") {
		t.Fatalf("a command's flag before it: exit %d: %s", code, errOut)
	}
	cli.want(adminUsage, "--server", n.URL())
	cli.want(adminUsage, "--output", "yaml", "status", "--server", n.URL(), "--admin-token", testAdminToken)
	cli.want(adminOK, "--server", n.URL(), "-h")
}
