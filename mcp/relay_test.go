package mcp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

// deadURL returns a loopback URL on which nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// failing is a server that is reachable but never answers MCP, as a
// broken proxy in front of a node would; it counts its requests.
func failing(t *testing.T) (string, *atomic.Int64) {
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, &n
}

// relayClient connects a client to NewRelay(servers) in process.
func relayClient(t *testing.T, servers []string) *sdk.ClientSession {
	t.Helper()
	cs, _ := relayWith(t, servers, RelayConfig{AttemptTimeout: 5 * time.Second})
	return cs
}

func TestRelay(t *testing.T) {
	fake := testkit.NewFakeService()
	live := strings.TrimSuffix(serve(t, Config{Service: fake}), "/mcp")
	broken, brokenHits := failing(t)
	cs := relayClient(t, []string{deadURL(t), broken, live + "/"})

	tools, err := cs.ListTools(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*sdk.Tool{}
	for _, tool := range Tools() {
		want[tool.Name] = tool
	}
	for _, tool := range tools.Tools {
		w := want[tool.Name]
		if w == nil || mustJSON(tool.InputSchema) != mustJSON(w.InputSchema) || mustJSON(tool.OutputSchema) != mustJSON(w.OutputSchema) ||
			mustJSON(tool.Annotations) != mustJSON(w.Annotations) || tool.Description != w.Description {
			t.Errorf("relay tool %s differs from the node's", tool.Name)
		}
		delete(want, tool.Name)
	}
	if len(want) != 0 {
		t.Errorf("relay lacks tools %v", want)
	}

	id := call(t, cs, ToolNewRequestID, nil)
	rid, _ := id.Data["request_id"].(string)
	if id.HTTPStatus != 200 || uuid.Validate(rid) != nil {
		t.Fatalf("new_request_id: %s", id.Text)
	}
	first := call(t, cs, ToolPostEntry, question(rid, "via relay"))
	if first.HTTPStatus != 201 || first.Data["channel"] != "mcp" || first.Data["replayed"] != false {
		t.Fatalf("post via relay: %s", first.Text)
	}
	hitsAfterFirst := brokenHits.Load()
	if hitsAfterFirst == 0 {
		t.Error("the broken server was never tried")
	}
	again := call(t, cs, ToolPostEntry, question(rid, "via relay"))
	if again.HTTPStatus != 200 || again.Data["replayed"] != true || again.Data["id"] != first.Data["id"] {
		t.Errorf("replay via relay: %s", again.Text)
	}
	if brokenHits.Load() != hitsAfterFirst {
		t.Error("the relay went back to a failing server before the one that answered")
	}

	tests := []struct {
		name   string
		tool   string
		args   any
		hook   error
		status int
		code   restarea.Code
		retry  int
	}{
		{"bad input passes through", ToolPostEntry, map[string]any{"request_id": "x"}, nil, 400, restarea.CodeInvalidRequest, 0},
		{"rate limit passes through", ToolPostEntry, question(uuid.NewString(), "b"),
			restarea.Errorf(restarea.CodeRateLimited, "slow").WithRetryAfter(7 * time.Second), 429, restarea.CodeRateLimited, 7},
		{"not found passes through", ToolGetThread, map[string]any{"id": uuid.NewString()}, nil, 404, restarea.CodeNotFound, 0},
		{"read", ToolListThreads, map[string]any{"limit": 1}, nil, 200, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake.SetHook(func(context.Context, testkit.Call) error { return tt.hook })
			defer fake.SetHook(nil)
			got := call(t, cs, tt.tool, tt.args)
			if got.HTTPStatus != tt.status || got.RetryAfterSeconds != tt.retry || (tt.code != "" && (got.Error == nil || got.Error.Code != tt.code)) {
				t.Errorf("got %s, want %d %s retry %d", got.Text, tt.status, tt.code, tt.retry)
			}
		})
	}
}

// TestRelayProtocolError checks that a server's JSON-RPC error is its
// answer: it reaches the agent and the relay does not try the next server.
func TestRelayProtocolError(t *testing.T) {
	bare := sdk.NewServer(&sdk.Implementation{Name: "bare", Version: "1"}, nil) // knows no tools
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return bare },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(ts.Close)
	fallback, hits := failing(t)
	cs := relayClient(t, []string{ts.URL, fallback})
	_, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: ToolGetThread, Arguments: map[string]any{"id": uuid.NewString()}})
	if err == nil || !strings.Contains(err.Error(), ToolGetThread) {
		t.Errorf("want the server's unknown-tool error, got %v", err)
	}
	if hits.Load() != 0 {
		t.Error("the relay tried the next server after an answer")
	}
}

func TestRelayNoServer(t *testing.T) {
	broken, _ := failing(t)
	cs := relayClient(t, []string{deadURL(t), broken})
	for _, tool := range []string{ToolPostEntry, ToolListReplies} {
		got := call(t, cs, tool, question(uuid.NewString(), "b"))
		if got.HTTPStatus != 503 || got.Error == nil || got.Error.Code != restarea.CodeUnavailable ||
			got.RetryAfterSeconds != 1 || !got.IsError || !strings.Contains(got.Error.Message, "same request_id") {
			t.Errorf("%s: %s", tool, got.Text)
		}
	}
	// new_request_id needs no cluster.
	if got := call(t, cs, ToolNewRequestID, nil); got.HTTPStatus != 200 {
		t.Errorf("new_request_id without a cluster: %s", got.Text)
	}
}

// TestRelayBinary runs "restarea mcp --server ..." as a desktop agent
// would, over stdio.
func TestRelayBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := testkit.Binary(t)

	usage := exec.Command(bin, "mcp")
	usage.Env = append(os.Environ(), "RESTAREA_SERVER=")
	if err := usage.Run(); !exitCode(err, 2) {
		t.Errorf("restarea mcp without --server: %v, want exit status 2", err)
	}

	fake := testkit.NewFakeService()
	live := strings.TrimSuffix(serve(t, Config{Service: fake}), "/mcp")
	// Servers that accept connections but never answer cost the handshake
	// timeout (DefaultRelayConnectTimeout) each, not a call timeout.
	hung, hungHits := silent(t)
	hung2, hung2Hits := silent(t)
	cmd := exec.Command(bin, "mcp", "--server", hung+","+hung2+","+deadURL(t)+","+live)
	cmd.Stderr = os.Stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).
		Connect(testCtx(t), &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(testCtx(t), nil)
	if err != nil || len(tools.Tools) != 7 {
		t.Fatalf("list tools over stdio: %v, %d tools", err, len(tools.Tools))
	}
	rid := uuid.NewString()
	for i, want := range []int{201, 200} {
		start := time.Now()
		got := call(t, cs, ToolPostEntry, question(rid, "stdio"))
		took := time.Since(start)
		if got.HTTPStatus != want || got.Data["channel"] != "mcp" {
			t.Errorf("post %d over stdio: %s", i, got.Text)
		}
		t.Logf("post %d over stdio took %s", i, took)
		if i == 0 && took > 2*DefaultRelayConnectTimeout+5*time.Second {
			t.Errorf("first post took %s behind two silent servers, want about %s", took, 2*DefaultRelayConnectTimeout)
		}
		if i == 1 && took > DefaultRelayConnectTimeout {
			t.Errorf("second post took %s: the silent server was waited on again", took)
		}
	}
	if hungHits.Load() == 0 || hung2Hits.Load() == 0 {
		t.Error("a silent server was never tried")
	}
	if m := lastMeta(fake); m.Channel != restarea.ChannelMCP {
		t.Errorf("relayed post has channel %q", m.Channel)
	}
}

func exitCode(err error, code int) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == code
}
