package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

// testTimeout bounds every client operation of a test, so that a broken
// server fails the test instead of hanging it.
const testTimeout = 20 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// serve starts NewHandler(cfg) on a loopback httptest server, mounted at
// /mcp as a node mounts it, and returns the endpoint URL.
func serve(t *testing.T, cfg Config) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/mcp", NewHandler(cfg))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// connect opens a client session to url; version "" is the SDK default.
func connect(t *testing.T, url, version string, hc *http.Client) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(testCtx(t), &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true},
		&sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s (version %q): %v", url, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	if version != "" {
		if got := cs.InitializeResult().ProtocolVersion; got != version {
			t.Fatalf("negotiated protocol %s, want %s", got, version)
		}
	}
	return cs
}

// wireResult is a tool result as an agent sees it.
type wireResult struct {
	Result
	Data    map[string]any `json:"data"`
	IsError bool           `json:"-"`
	Text    string         `json:"-"`
}

// call calls a tool and decodes its structured content, checking the
// invariants every result must keep: text content equal to the structured
// JSON, and isError exactly when http_status >= 400.
func call(t *testing.T, cs *sdk.ClientSession, name string, args any) wireResult {
	t.Helper()
	res, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	return decodeResult(t, name, res)
}

func decodeResult(t *testing.T, name string, res *sdk.CallToolResult) wireResult {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("%s: structured content: %v", name, err)
	}
	var w wireResult
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatalf("%s: decode %s: %v", name, b, err)
	}
	w.IsError = res.IsError
	if len(res.Content) != 1 {
		t.Fatalf("%s: want one text content, got %d", name, len(res.Content))
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T, want text", name, res.Content[0])
	}
	w.Text = tc.Text
	var fromText, fromStruct any
	if err := json.Unmarshal([]byte(tc.Text), &fromText); err != nil {
		t.Fatalf("%s: text content is not JSON: %q", name, tc.Text)
	}
	json.Unmarshal(b, &fromStruct)
	if mustJSON(fromText) != mustJSON(fromStruct) {
		t.Errorf("%s: text %s differs from structured content %s", name, tc.Text, b)
	}
	if w.IsError != (w.HTTPStatus >= 400) {
		t.Errorf("%s: isError %v with http_status %d", name, w.IsError, w.HTTPStatus)
	}
	return w
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// question returns valid post_entry arguments for a new question.
func question(requestID, body string) map[string]any {
	q := testkit.Question("a title")
	q.RequestID, q.Body = requestID, body
	return testkit.Args(q)
}

// reply returns valid post_entry arguments for a reply to parent.
func reply(requestID, parent, body string) map[string]any {
	r := testkit.Reply(parent, body)
	r.RequestID = requestID
	return testkit.Args(r)
}

// lastMeta returns what the service was told about the last call.
func lastMeta(f *testkit.FakeService) restarea.PostMeta {
	_, c := f.Last()
	return c.Meta
}
