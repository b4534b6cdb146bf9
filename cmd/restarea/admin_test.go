package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/client"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

const testAdminToken = "admin-cli-test-token-0123456789"

// adminCLI runs `restarea admin ARGS` as a process against a cluster.
type adminCLI struct {
	t       *testing.T
	servers string
	env     []string
}

// run runs the binary with args (after "admin"), the servers and the
// token given through the environment, as an operator's shell would.
func (c adminCLI) run(args ...string) (int, string, string) {
	c.t.Helper()
	// The binary first: the package's first call builds it, which takes
	// minutes of its own on a busy machine; the bound is the command's.
	bin := testkit.Binary(c.t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"admin"}, args...)...)
	cmd.Env = append(cleanEnv(), c.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		c.t.Fatalf("run %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// want runs args and fails the test unless the exit code is code; it
// returns standard output.
func (c adminCLI) want(code int, args ...string) string {
	c.t.Helper()
	got, out, errOut := c.run(args...)
	if got != code {
		c.t.Fatalf("restarea admin %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), got, code, out, errOut)
	}
	return out
}

// json runs args with --output json, wants exit 0 and decodes the one
// document printed into v.
func (c adminCLI) json(v any, args ...string) {
	c.t.Helper()
	out := c.want(0, append(args, "--output", "json")...)
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		c.t.Fatalf("restarea admin %s: output is not the expected JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
	if dec.More() {
		c.t.Fatalf("restarea admin %s: more than one JSON document:\n%s", strings.Join(args, " "), out)
	}
}

// deadURL returns a loopback URL nothing listens on: connections to it are
// refused.
func deadURL(t *testing.T) string { return "http://" + testkit.FreeAddr(t) } // nothing listens there

func postQuestion(t *testing.T, n *node.Node, title string) restarea.Entry {
	t.Helper()
	return testnode.Post(t, n, testkit.Question(title)).Entry
}

// TestAdminCLI runs every admin command as a process against a real
// 3-node cluster, with a dead server first in --server so that every
// command also fails over.
func TestAdminCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts a 3-node cluster")
	}
	// A build of their own, which `admin status` must show for each node.
	const testVersion, testCommit = "v0.0.0-admintest", "0123456789abcdef0123456789abcdef01234567-dirty"
	nodes := testnode.StartCluster(t, 3, testnode.WithAdminToken(testAdminToken),
		testnode.WithConfig(func(c *server.Config) { c.Version, c.Commit = testVersion, testCommit }))
	servers := strings.Join([]string{deadURL(t), nodes[0].URL(), nodes[1].URL()}, ",")
	cli := adminCLI{t: t, env: []string{"RESTAREA_SERVER=" + servers, "RESTAREA_ADMIN_TOKEN=" + testAdminToken}}
	q1 := postQuestion(t, nodes[0], "first question")
	q2 := postQuestion(t, nodes[1], "second question")
	// Operator actions are audited once the cluster writes log format 3,
	// which a fresh cluster's leader switches to within moments.
	testnode.WaitLogFormat(t, nodes[0], 3)

	t.Run("settings", func(t *testing.T) {
		cli.t = t
		var s restarea.Settings
		cli.json(&s, "settings", "get")
		if s.PerSourceLimit.Count != 100000 || s.WritesDisabled {
			t.Fatalf("settings: %+v", s)
		}
		out := cli.want(0, "settings", "set", "--rate-per-source", "30/m", "--writes-disabled=true")
		for _, want := range []string{"writes_disabled:  true", "rate_per_source:  30/m", "rate_global:      1000000/h"} {
			if !strings.Contains(out, want) {
				t.Errorf("settings set table lacks %q:\n%s", want, out)
			}
		}
		cli.json(&s, "settings", "set", "--writes-disabled=false", "--rate-global", "5/10s")
		want := restarea.Settings{PerSourceLimit: restarea.Limit{Count: 30, WindowSeconds: 60}, GlobalLimit: restarea.Limit{Count: 5, WindowSeconds: 10}}
		if s != want {
			t.Fatalf("after set: %+v, want %+v (only the given fields change)", s, want)
		}
		cli.want(2, "settings", "set")                              // nothing to change
		cli.want(2, "settings", "set", "--rate-per-source", "30/x") // parsed as serve parses it
		cli.want(2, "settings", "set", "--rate-global", "0/h")
		cli.json(&s, "settings", "set", "--rate-global", "1000000/h", "--rate-per-source", "100000/m")
	})

	t.Run("entries", func(t *testing.T) {
		cli.t = t
		var page restarea.EntryPage
		cli.json(&page, "entries", "list")
		if len(page.Entries) != 2 || page.Entries[0].ID != q2.ID || page.Entries[0].RequestID != q2.RequestID || page.NextCursor != nil {
			t.Fatalf("entries list: %+v", page)
		}
		cli.json(&page, "entries", "list", "--limit", "1")
		if len(page.Entries) != 1 || page.NextCursor == nil {
			t.Fatalf("entries list --limit 1: %+v", page)
		}
		var next restarea.EntryPage
		cli.json(&next, "entries", "list", "--limit", "1", "--cursor", *page.NextCursor, "--strong")
		if len(next.Entries) != 1 || next.Entries[0].ID != q1.ID {
			t.Fatalf("second page: %+v", next)
		}
		cli.json(&page, "entries", "list", "--all", "--limit", "1")
		if len(page.Entries) != 2 || page.Entries[1].ID != q1.ID {
			t.Fatalf("entries list --all: %+v", page)
		}
		out := cli.want(0, "entries", "list", "--all", "--limit", "1")
		if strings.Count(out, "REQUEST_ID") != 1 || !strings.Contains(out, q1.ID) || !strings.Contains(out, q2.ID) {
			t.Fatalf("entries list --all table:\n%s", out)
		}
		out = cli.want(0, "entries", "list")
		if !strings.Contains(out, "REQUEST_ID") || !strings.Contains(out, q1.RequestID) || !strings.Contains(out, "first question") {
			t.Fatalf("entries list table:\n%s", out)
		}
		cli.want(2, "entries", "list", "--limit", "201")

		out = cli.want(0, "entries", "show", q1.ID)
		for _, want := range []string{"request_id:", q1.RequestID, "state:", "visible", "channel:", "http", "body of first question"} {
			if !strings.Contains(out, want) {
				t.Errorf("entries show lacks %q:\n%s", want, out)
			}
		}
		var e restarea.Entry
		cli.json(&e, "entries", "hide", q1.ID)
		if e.Visible || e.ID != q1.ID {
			t.Fatalf("hide: %+v", e)
		}
		cli.json(&e, "entries", "hide", q1.ID) // twice is harmless
		cli.json(&e, "entries", "show", q1.ID, "--strong")
		if e.Visible || e.RequestID != q1.RequestID {
			t.Fatalf("show after hide: %+v", e)
		}
		cli.json(&e, "entries", "unhide", q1.ID)
		if !e.Visible {
			t.Fatalf("unhide: %+v", e)
		}

		cli.want(2, "entries", "delete", q2.ID) // no --yes: nothing sent
		cli.want(0, "entries", "show", q2.ID)
		var d client.DeleteResult
		cli.json(&d, "entries", "delete", q2.ID, "--yes")
		if !d.Deleted || d.ID != q2.ID {
			t.Fatalf("delete: %+v", d)
		}
		cli.want(4, "entries", "show", q2.ID, "--strong")
		cli.want(4, "entries", "hide", "0190a0b1-0000-7000-8000-000000000000")
		cli.want(2, "entries", "show")
		cli.want(2, "entries", "show", "a", "b")
		cli.want(2, "entries", "frobnicate", "x")
	})

	t.Run("audit", func(t *testing.T) {
		cli.t = t
		var page restarea.AuditPage
		cli.json(&page, "audit", "list", "--limit", "200")
		seen := map[restarea.AuditAction]bool{}
		for _, r := range page.Records {
			seen[r.Action] = true
			if r.Action == restarea.AuditHide && (r.EntryID != q1.ID || r.Source != "127.0.0.1") {
				t.Errorf("hide record: %+v", r)
			}
		}
		for _, a := range []restarea.AuditAction{restarea.AuditSettings, restarea.AuditHide, restarea.AuditUnhide, restarea.AuditDelete} {
			if !seen[a] {
				t.Errorf("audit list lacks a %s record: %+v", a, page.Records)
			}
		}
		out := cli.want(0, "audit", "list")
		for _, want := range []string{"ACTION", "hide", "question " + q1.ID, "visible: true -> false", "127.0.0.1"} {
			if !strings.Contains(out, want) {
				t.Errorf("audit list table lacks %q:\n%s", want, out)
			}
		}
		cli.want(2, "audit", "list", "--limit", "201")
	})

	t.Run("backup", func(t *testing.T) {
		cli.t = t
		path := filepath.Join(t.TempDir(), "backup.db")
		out := cli.want(0, "backup", "-o", path)
		if !strings.Contains(out, "wrote "+path) {
			t.Fatalf("backup: %s", out)
		}
		if _, err := fsm.CheckStateFile(path); err != nil {
			t.Fatalf("the backup is not a state file: %v", err)
		}
		cli.want(2, "backup", "-o", path) // exists, no --force
		var res struct {
			File  string `json:"file"`
			Bytes int64  `json:"bytes"`
		}
		cli.json(&res, "backup", "-o", path, "--force")
		st, err := os.Stat(path)
		if err != nil || st.Size() != res.Bytes || res.File != path {
			t.Fatalf("backup --force: %+v, stat %v %v", res, st, err)
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".backup.db.tmp-*")); len(left) > 0 {
			t.Fatalf("temporary files left: %v", left)
		}
		cli.want(2, "backup")
	})

	t.Run("members and leader", func(t *testing.T) {
		cli.t = t
		var m client.MemberList
		cli.json(&m, "members", "list")
		if len(m.Members) != 3 || m.LeaderID == "" {
			t.Fatalf("members: %+v", m)
		}
		for _, mb := range m.Members {
			if mb.URL == "" || mb.RaftAddr == "" {
				t.Fatalf("member without address with the admin token: %+v", mb)
			}
		}
		// An election may run between two calls on a busy machine: the
		// table names a leader once there is one again.
		testkit.Eventually(t, 30*time.Second, "the members table to name a leader", func() error {
			out := cli.want(0, "members", "list")
			if !strings.Contains(out, "leader") || !strings.Contains(out, nodes[2].URL()) {
				return fmt.Errorf("members table:\n%s", out)
			}
			return nil
		})
		var to string
		for _, n := range nodes {
			if n.ID() != m.LeaderID {
				to = n.ID()
				break
			}
		}
		var st restarea.ClusterStatus
		cli.json(&st, "leader", "transfer", "--to", to)
		if st.LeaderID != to {
			t.Fatalf("leader after transfer --to %s: %+v", to, st)
		}
		out := cli.want(0, "leader", "transfer")
		if !strings.HasPrefix(out, "leader: ") || strings.Contains(out, "leader: "+to+" ") {
			t.Fatalf("leader transfer: %s", out)
		}
		cli.want(4, "leader", "transfer", "--to", "no-such-node")
		cli.want(2, "members", "remove", nodes[2].ID()) // no --yes
		cli.want(4, "members", "remove", "no-such-node", "--yes")
	})

	t.Run("status", func(t *testing.T) {
		cli.t = t
		// Eventually one leader and every view complete: right after the
		// transfers above, and with 200 ms election timeouts on a loaded
		// machine, a view may be caught mid-election.
		var v client.ClusterView
		testkit.Eventually(t, 30*time.Second, "one leader and every view complete", func() error {
			cli.json(&v, "status")
			if why := statusProblem(v, 3); why != "" {
				return fmt.Errorf("%s: %+v", why, v)
			}
			return nil
		})
		out := cli.want(0, "status")
		for _, n := range v.Nodes {
			if n.Status.Version != testVersion || n.Status.Commit != testCommit {
				t.Errorf("status --output json of %s: version %q commit %q", n.ID, n.Status.Version, n.Status.Commit)
			}
		}
		for _, want := range []string{"NODE", "LAG", "LOG_FORMAT", "VERSION", "REVISION", testVersion, "0123456789ab-dirty", "leader", "follower", nodes[2].URL()} {
			if !strings.Contains(out, want) {
				t.Errorf("status table lacks %q:\n%s", want, out)
			}
		}

		// A node down is a row, not a failure. Keep the leader up so that
		// the survivors need no election.
		down := nodes[2]
		if down.IsLeader() {
			down = nodes[1]
		}
		down.Close()
		out = cli.want(0, "status")
		if !strings.Contains(out, "unreachable") || !strings.Contains(out, down.ID()) {
			t.Fatalf("status with %s down:\n%s", down.ID(), out)
		}
		cli.json(&v, "status")
		for _, n := range v.Nodes {
			if (n.ID == down.ID()) == n.Reachable || (n.ID == down.ID()) != (n.Error != "") {
				t.Fatalf("node view with %s down: %+v", down.ID(), n)
			}
		}
		var r client.RemoveResult
		cli.json(&r, "members", "remove", down.ID(), "--yes")
		var m client.MemberList
		cli.json(&m, "members", "list", "--server", testnode.Leader(t, nodes).URL())
		if len(m.Members) != 2 {
			t.Fatalf("members after removing %s: %+v", down.ID(), m)
		}
	})

	// Last: wrong tokens count against the source's admin throttle.
	t.Run("exit codes", func(t *testing.T) {
		cli.t = t
		cli.want(5, "settings", "get", "--admin-token", "wrong-token-of-sufficient-length")
		cli.want(5, "status", "--admin-token", "wrong-token-of-sufficient-length")
		cli.want(2, "settings", "get", "--admin-token", "short")
		cli.want(2, "settings", "get", "--output", "yaml")
		cli.want(2, "settings", "get", "extra")
		cli.want(2, "nosuch")
		cli.want(2)
		cli.want(0, "--help")
		noServer := adminCLI{t: t, env: []string{"RESTAREA_ADMIN_TOKEN=" + testAdminToken}}
		noServer.want(2, "settings", "get")
		noToken := adminCLI{t: t}
		noToken.want(2, "settings", "get", "--server", servers)
		// The token from a file, the servers from the flag.
		file := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(file, []byte(testAdminToken+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var s restarea.Settings
		noToken.json(&s, "settings", "get", "--server", servers, "--admin-token-file", file)
		noToken.want(2, "settings", "get", "--server", servers, "--admin-token-file", file, "--admin-token", testAdminToken)
		dead := adminCLI{t: t, env: []string{"RESTAREA_SERVER=" + deadURL(t) + "," + deadURL(t), "RESTAREA_ADMIN_TOKEN=" + testAdminToken}}
		for _, args := range [][]string{{"settings", "get"}, {"status"}, {"entries", "hide", "x"}, {"leader", "transfer"}} {
			code, _, errOut := dead.run(append(args, "--timeout", "3s")...)
			if code != 3 || !strings.Contains(errOut, "no server answered") {
				t.Fatalf("%v on dead servers: exit %d, %s", args, code, errOut)
			}
		}
	})
}

// TestAdminCLIAdminOff checks the hint on a node without the admin API:
// its 404 is not "no such entry".
func TestAdminCLIAdminOff(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	n := testnode.Start(t)
	cli := adminCLI{t: t, env: []string{"RESTAREA_SERVER=" + n.URL(), "RESTAREA_ADMIN_TOKEN=" + testAdminToken}}
	code, _, errOut := cli.run("entries", "hide", "0190a0b1-0000-7000-8000-000000000000")
	if code != 1 || !strings.Contains(errOut, "is the admin API on?") {
		t.Fatalf("admin API off: exit %d, %s", code, errOut)
	}
}

// statusProblem says what is wrong with a status of a healthy cluster of
// size members, or "".
func statusProblem(v client.ClusterView, size int) string {
	if len(v.Nodes) != size || v.LeaderID == "" || v.LeaderCommit == 0 {
		return "not every member, or no leader"
	}
	leaders := 0
	for _, n := range v.Nodes {
		if !n.Reachable || n.Status == nil || n.Status.NodeID != n.ID || n.Lag == nil || n.Status.LogFormat == 0 || n.Error != "" {
			return fmt.Sprintf("incomplete view of %s", n.ID)
		}
		if n.Status.State == "leader" {
			leaders++
		}
	}
	if leaders != 1 {
		return fmt.Sprintf("%d leaders", leaders)
	}
	return ""
}

// TestEntryJSONStream checks that `entries list --all --output json`,
// written page by page, is byte for byte the document printJSON writes.
func TestEntryJSONStream(t *testing.T) {
	e1 := restarea.Entry{ID: "a", Type: restarea.TypeQuestion, Title: "t \"q\"", Body: "b\n", Visible: true}
	e2 := restarea.Entry{ID: "b", Type: restarea.TypeReply, ParentID: "a", Body: "r"}
	for _, pages := range [][][]restarea.Entry{nil, {{}}, {{e1}}, {{e1, e2}}, {{e1}, {}, {e2}}} {
		var got, want bytes.Buffer
		j := &entryJSON{w: &got}
		all := []restarea.Entry{}
		for _, p := range pages {
			j.add(p)
			all = append(all, p...)
		}
		j.end()
		printJSON(&want, restarea.EntryPage{Entries: all})
		if got.String() != want.String() {
			t.Errorf("pages %v:\ngot  %q\nwant %q", pages, got.String(), want.String())
		}
	}
}
