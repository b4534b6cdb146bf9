package raftlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// lines returns the JSON lines written to buf, decoded.
func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", l, err)
		}
		out = append(out, m)
	}
	buf.Reset()
	return out
}

func TestRaftLoggerWritesTheNodesShape(t *testing.T) {
	var buf bytes.Buffer
	sl := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug - 4})).With("node", "n1")
	l := New(sl, "raft")

	l.Info("entering follower state", "follower", "node2", "leader-address", "127.0.0.1:7000")
	l.Warn("failed to contact", "server-id", "node3", "error", errors.New("connection refused"))
	got := lines(t, &buf)
	if len(got) != 2 {
		t.Fatalf("%d lines, want 2", len(got))
	}
	want := map[string]any{"level": "INFO", "msg": "entering follower state", "component": "raft", "node": "n1",
		"follower": "node2", "leader-address": "127.0.0.1:7000"}
	for k, v := range want {
		if got[0][k] != v {
			t.Errorf("%s = %v, want %v (line %v)", k, got[0][k], v, got[0])
		}
	}
	if _, ok := got[0]["@level"]; ok {
		t.Errorf("hclog's own shape leaked: %v", got[0])
	}
	if got[1]["level"] != "WARN" || got[1]["error"] != "connection refused" {
		t.Errorf("warn line: %v", got[1])
	}

	// Below Info is dropped until the level is lowered; Trace lies below
	// slog's Debug.
	l.Debug("quiet")
	if len(lines(t, &buf)) != 0 || l.IsDebug() || !l.IsInfo() {
		t.Errorf("debug passed at the default level")
	}
	l.SetLevel(hclog.Trace)
	l.Trace("loud")
	if g := lines(t, &buf); len(g) != 1 || g[0]["level"] != "DEBUG-4" || !l.IsTrace() || l.GetLevel() != hclog.Trace {
		t.Errorf("trace after SetLevel(Trace): %v", g)
	}
	l.SetLevel(hclog.Info)

	// With and Named carry attributes and the component, without
	// repeating keys.
	sub := l.With("snapshot-id", "1-2-3").Named("snapshot")
	sub.Error("failed to persist", "bytes", 10)
	g := lines(t, &buf)
	if len(g) != 1 || g[0]["component"] != "raft.snapshot" || g[0]["snapshot-id"] != "1-2-3" || g[0]["level"] != "ERROR" || g[0]["bytes"] != float64(10) {
		t.Errorf("named sub-logger line: %v", g)
	}
	if sub.Name() != "raft.snapshot" || len(sub.ImpliedArgs()) != 2 {
		t.Errorf("name %q, implied %v", sub.Name(), sub.ImpliedArgs())
	}
	sub.ResetNamed("other").Info("x")
	raw := buf.String()
	if g := lines(t, &buf); strings.Count(raw, `"component"`) != 1 || g[0]["component"] != "other" {
		t.Errorf("reset name: %s", raw)
	}

	// A dangling value keeps hclog's key; hclog.Fmt is formatted.
	l.Info("odd", "k", "v", "dangling")
	l.With("lonely").Info("with odd", "k", hclog.Fmt("%d-%s", 7, "x"))
	g = lines(t, &buf)
	if g[0][hclog.MissingKey] != "dangling" || g[1][hclog.MissingKey] != "lonely" || g[1]["k"] != "7-x" {
		t.Errorf("odd arguments: %v", g)
	}

	// The standard-library bridge infers levels from their prefixes.
	std := l.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	std.Print("[WARN] raft: slow disk")
	if g := lines(t, &buf); len(g) != 1 || g[0]["level"] != "WARN" || g[0]["msg"] != "raft: slow disk" {
		t.Errorf("standard logger: %v", g)
	}
}

// The handler's level applies too: a node at warn hides raft's info.
func TestRaftLoggerFollowsTheHandlerLevel(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})), "raft")
	l.Info("hidden")
	l.Error("shown")
	if g := lines(t, &buf); len(g) != 1 || g[0]["msg"] != "shown" || l.IsInfo() {
		t.Errorf("lines %v, IsInfo %v", g, l.IsInfo())
	}
}

type stringer struct{ hidden int }

func (s *stringer) String() string { return fmt.Sprintf("node at %d", s.hidden) }

// Values with unexported fields that describe themselves are written as
// their String (raft logs itself so).
func TestRaftLoggerWritesStringers(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewJSONHandler(&buf, nil)), "raft")
	l.Info("entering follower state", "follower", &stringer{7}, "empty", hclog.Format{})
	if g := lines(t, &buf); g[0]["follower"] != "node at 7" || g[0]["empty"] != "" {
		t.Errorf("line %v", g[0])
	}
}

// A node's first election (no leader ever heard of) is logged at INFO;
// a heartbeat timeout after a leader was known stays a warning.
func TestFirstElectionIsInfo(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewJSONHandler(&buf, nil)), "raft")
	l.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "", "last-leader-id", "")
	l.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "127.0.0.1:1", "last-leader-id", "node-a")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"level":"INFO"`) || !strings.Contains(lines[1], `"level":"WARN"`) {
		t.Fatalf("want INFO then WARN:\n%s", buf.String())
	}
}
