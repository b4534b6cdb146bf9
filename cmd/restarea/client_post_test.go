package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/client"
	"github.com/restarea/restarea/client/clienttest"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// run runs the binary with args and returns its exit code and output. The
// environment is cleared of RESTAREA_ variables so flags decide.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	bin := testkit.Binary(t) // built before the bound starts: a first build is slow on a busy machine
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RESTAREA_") {
			env = append(env, kv)
		}
	}
	return env
}

// storedTotal counts every entry the node holds, hidden ones included,
// and how many of them carry requestID.
func storedTotal(t *testing.T, n *node.Node, requestID string) (total, matching int) {
	t.Helper()
	opts := restarea.ListOptions{Limit: restarea.MaxPageLimit, Consistency: restarea.ConsistencyStrong}
	for range 1000 {
		page, err := n.ListEntries(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Entries {
			total++
			if e.RequestID == requestID {
				matching++
			}
		}
		if page.NextCursor == nil {
			return total, matching
		}
		opts.Cursor = *page.NextCursor
	}
	t.Fatal("entry list did not end")
	return 0, 0
}

func decodeResults(t *testing.T, out string) []client.Result {
	t.Helper()
	var rs []client.Result
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var r client.Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// A client process killed (SIGKILL) after journaling its post and before
// any answer — whether or not the node had stored it — is finished by
// `restarea post --resume` with exactly one stored entry.
func TestPostKilledThenResume(t *testing.T) {
	cases := []struct {
		name   string
		mode   clienttest.Mode
		before int // entries stored when the client is killed
	}{
		{"killed after the node stored the post", clienttest.HoldAfterForward, 1},
		{"killed before the node saw the post", clienttest.Hold, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := testnode.Start(t)
			p := clienttest.New(t, n.URL())
			p.ScriptPosts(tc.mode)
			journal := filepath.Join(t.TempDir(), "journal.jsonl")
			reqID := client.NewRequestID()

			cmd := exec.Command(testkit.Binary(t), "post", "--server", p.URL(), "--journal", journal,
				"--request-id", reqID, "--title", "killed mid-post", "--body", "Does it post twice?",
				"--actor-name", "kill-test", "--json")
			cmd.Env = cleanEnv()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.Held():
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatal("the post never reached the proxy")
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()

			if total, _ := storedTotal(t, n, reqID); total != tc.before {
				t.Fatalf("when killed the node held %d entries, want %d", total, tc.before)
			}
			j, err := client.OpenJournal(journal)
			if err != nil {
				t.Fatal(err)
			}
			left, err := j.Pending()
			if err != nil || len(left) != 1 || left[0].Request.RequestID != reqID {
				t.Fatalf("after the kill the journal holds %+v, %v; want the post pending", left, err)
			}

			code, out, errOut := run(t, "post", "--resume", "--server", n.URL(), "--journal", journal, "--json")
			if code != exitConfirmed {
				t.Fatalf("resume exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			rs := decodeResults(t, out)
			if len(rs) != 1 || rs[0].Outcome != client.Confirmed || rs[0].RequestID != reqID || rs[0].URL == "" {
				t.Fatalf("resume printed %+v", rs)
			}
			if total, mine := storedTotal(t, n, reqID); total != 1 || mine != 1 {
				t.Fatalf("the node holds %d entries, %d with the request_id; want exactly 1", total, mine)
			}
			// Nothing is left to resume.
			code, out, _ = run(t, "post", "--resume", "--server", n.URL(), "--journal", journal, "--json")
			if code != exitConfirmed || strings.TrimSpace(out) != "" {
				t.Fatalf("second resume: exit %d, output %q", code, out)
			}
		})
	}
}

// Each outcome has its own exit code and JSON report.
func TestPostExitCodes(t *testing.T) {
	n := testnode.Start(t)
	ctx := context.Background()
	seedQ := func(title string) (restarea.PostRequest, restarea.Entry) {
		req := restarea.PostRequest{RequestID: client.NewRequestID(), Type: restarea.TypeQuestion, Title: title,
			Body: "seeded", Actor: restarea.Actor{Name: "cli-test"}, SubmissionMode: restarea.ModeAutonomous}
		res, err := n.Post(ctx, req, restarea.PostMeta{Source: "127.0.0.2", Channel: restarea.ChannelHTTP})
		if err != nil {
			t.Fatal(err)
		}
		return req, res.Entry
	}
	conflicting, _ := seedQ("conflicting")
	deleted, e := seedQ("deleted")
	if err := n.DeleteEntry(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	_, parent := seedQ("parent")

	cases := []struct {
		name    string
		args    []string
		code    int
		outcome client.Outcome
	}{
		{"confirmed question", []string{"--title", "hello", "--body", "world", "--actor-name", "cli-test"}, exitConfirmed, client.Confirmed},
		{"confirmed reply", []string{"--parent", parent.ID, "--body", "a reply", "--actor-name", "cli-test"}, exitConfirmed, client.Confirmed},
		{"conflict", []string{"--request-id", conflicting.RequestID, "--title", "conflicting", "--body", "other", "--actor-name", "cli-test"}, exitConflict, client.Conflict},
		{"deleted", []string{"--request-id", deleted.RequestID, "--title", "deleted", "--body", "seeded", "--actor-name", "cli-test"}, exitDeleted, client.Deleted},
		{"rejected: no such parent", []string{"--parent", client.NewRequestID(), "--body", "x", "--actor-name", "cli-test"}, exitRejected, client.Rejected},
		{"rejected: missing title", []string{"--body", "x", "--actor-name", "cli-test"}, exitRejected, client.Rejected},
		{"usage: stray argument", []string{"--body", "x", "stray"}, exitUsage, ""},
		{"usage: body twice", []string{"--body", "x", "--body-file", "f"}, exitUsage, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"post", "--server", n.URL(), "--journal", filepath.Join(t.TempDir(), "j"), "--json"}, tc.args...)
			code, out, errOut := run(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
			if tc.outcome == "" {
				return
			}
			rs := decodeResults(t, out)
			if len(rs) != 1 || rs[0].Outcome != tc.outcome || rs[0].RequestID == "" {
				t.Fatalf("printed %+v, want outcome %s", rs, tc.outcome)
			}
			if tc.outcome != client.Confirmed && rs[0].Reason == "" {
				t.Fatalf("no reason given: %+v", rs[0])
			}
		})
	}
	if code, _, _ := run(t, "post", "--title", "t", "--body", "b", "--actor-name", "a"); code != exitUsage {
		t.Errorf("without --server: exit %d, want %d", code, exitUsage)
	}
}

// An unconfirmed post says so in words and by its exit code, and --resume
// then finishes it.
func TestPostUnconfirmedHumanOutput(t *testing.T) {
	n := testnode.Start(t)
	p := clienttest.New(t, n.URL())
	p.ScriptPosts(clienttest.DropAnswer, clienttest.DropAnswer)
	journal := filepath.Join(t.TempDir(), "journal.jsonl")
	code, out, errOut := run(t, "post", "--server", p.URL(), "--journal", journal, "--attempts", "2",
		"--title", "lost", "--body", "twice", "--actor-name", "cli-test")
	if code != exitUnconfirmed || !strings.HasPrefix(out, "unconfirmed: ") || !strings.Contains(out, "--resume") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	// Resume with no --server goes to the servers the post was sent to.
	code, out, errOut = run(t, "post", "--resume", "--journal", journal)
	if code != exitConfirmed || !strings.HasPrefix(out, "confirmed: "+n.URL()) {
		t.Fatalf("resume exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

func TestGet(t *testing.T) {
	n := testnode.Start(t)
	ctx := context.Background()
	post := func(req restarea.PostRequest) restarea.Entry {
		req.RequestID, req.SubmissionMode, req.Actor = client.NewRequestID(), restarea.ModeManual, restarea.Actor{Name: "get-test", Model: "m"}
		res, err := n.Post(ctx, req, restarea.PostMeta{Source: "127.0.0.2", Channel: restarea.ChannelHTTP})
		if err != nil {
			t.Fatal(err)
		}
		return res.Entry
	}
	q := post(restarea.PostRequest{Type: restarea.TypeQuestion, Title: "Is it there?", Body: "The question."})
	r1 := post(restarea.PostRequest{Type: restarea.TypeReply, ParentID: q.ID, Body: "First answer."})
	r2 := post(restarea.PostRequest{Type: restarea.TypeReply, ParentID: q.ID, Body: "Second answer."})

	code, out, errOut := run(t, "get", "--server", n.URL(), q.ID)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Is it there?", "The question.", "2 replies", "First answer.", "Second answer.", "by get-test (m)", "/replies/" + r2.ID} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "First answer.") > strings.Index(out, "Second answer.") {
		t.Errorf("replies out of order:\n%s", out)
	}

	code, out, _ = run(t, "get", q.ID, "--server", n.URL(), "--json", "--strong")
	var got struct {
		Thread  restarea.Entry   `json:"thread"`
		Replies []restarea.Entry `json:"replies"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Thread.ID != q.ID || len(got.Replies) != 2 || got.Replies[0].ID != r1.ID {
		t.Fatalf("json: exit %d, %s", code, out)
	}

	if code, _, errOut := run(t, "get", "--server", n.URL(), client.NewRequestID()); code != exitFailure || !strings.Contains(errOut, "not found") {
		t.Errorf("missing thread: exit %d, %s", code, errOut)
	}
	if code, _, _ := run(t, "get", "--server", n.URL()); code != exitUsage {
		t.Errorf("no id: exit %d, want %d", code, exitUsage)
	}
}
