package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/restarea/restarea/internal/testkit"
)

// revisions are the MCP revisions a node answers; "" is a request
// without the MCP-Protocol-Version header (2025-03-26 by the transport's
// rule, and what curl-style clients send).
var revisions = []string{"", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}

// rpcAnswer is one raw answer from /mcp.
type rpcAnswer struct {
	status int
	ctype  string
	msg    map[string]any
	raw    string
}

// rpcAt posts one JSON-RPC call of method at revision rev over real HTTP,
// shaped as a client of that revision sends it: from 2026-07-28 on with
// the Mcp-Method header and the protocol version in params._meta.
func rpcAt(t *testing.T, url, rev, accept, method string, params map[string]any) rpcAnswer {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	req := map[string]any{"jsonrpc": "2.0", "id": 7, "method": method}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", accept)
	if rev != "" {
		h.Set("MCP-Protocol-Version", rev)
	}
	if rev >= "2026-07-28" {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    rev,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
		h.Set("Mcp-Method", method)
		if name, ok := params["name"].(string); ok {
			h.Set("Mcp-Name", name)
		}
		if uri, ok := params["uri"].(string); ok {
			h.Set("Mcp-Name", uri)
		}
	}
	req["params"] = params
	body, _ := json.Marshal(req)
	hr, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header = h
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := rpcAnswer{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), raw: string(b)}
	if err := json.Unmarshal(b, &a.msg); err != nil {
		t.Fatalf("%s at %q: answer is not one JSON object (%d %s): %q", method, rev, a.status, a.ctype, b)
	}
	return a
}

func (a rpcAnswer) errorCode() float64 {
	e, _ := a.msg["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

func (a rpcAnswer) result() map[string]any {
	r, _ := a.msg["result"].(map[string]any)
	return r
}

const bothTypes = "application/json, text/event-stream"

// TestUnknownMethod: an unknown method is -32601 Method not found at every
// revision, with its id, in an answer the revision's clients read: 200
// before 2026-07-28 (a JSON-RPC error is an answer there), 404 from it.
func TestUnknownMethod(t *testing.T) {
	url := serve(t, Config{Service: testkit.NewFakeService()})
	for _, rev := range revisions {
		for _, method := range []string{"nope/x", "vendor.example/extension", "tools/lis"} {
			for _, accept := range []string{bothTypes, "application/json"} {
				a := rpcAt(t, url, rev, accept, method, nil)
				want := http.StatusOK
				if rev >= "2026-07-28" {
					want = http.StatusNotFound
				}
				if a.status != want || a.errorCode() != -32601 || a.msg["id"] != float64(7) || !strings.HasPrefix(a.ctype, "application/json") {
					t.Errorf("%s at %q (Accept %q): %d %s, want %d with -32601 and id 7", method, rev, accept, a.status, a.raw, want)
				}
			}
		}
	}
}

// TestOptionalMethodsProbe: the optional list methods clients probe answer
// at every revision, as a result or as -32601, never as -32600.
func TestOptionalMethodsProbe(t *testing.T) {
	url := serve(t, Config{Service: testkit.NewFakeService()})
	for _, rev := range revisions {
		for _, method := range []string{"resources/list", "prompts/list", "resources/templates/list"} {
			a := rpcAt(t, url, rev, bothTypes, method, nil)
			if c := a.errorCode(); c != 0 && c != -32601 {
				t.Errorf("%s at %q: %d %s", method, rev, a.status, a.raw)
			}
			if a.errorCode() == 0 && a.status != 200 {
				t.Errorf("%s at %q: result with status %d", method, rev, a.status)
			}
		}
	}
}

// TestAcceptJSONOnly: a client that accepts only application/json gets
// JSON answers (the endpoint never streams); one that accepts only
// text/event-stream is still refused with a JSON-RPC error.
func TestAcceptJSONOnly(t *testing.T) {
	url := serve(t, Config{Service: testkit.NewFakeService()})
	for _, rev := range revisions {
		for _, accept := range []string{"application/json", "application/json;q=1", "application/*", "Application/JSON"} {
			a := rpcAt(t, url, rev, accept, "tools/list", nil)
			if tools, _ := a.result()["tools"].([]any); a.status != 200 || a.ctype != "application/json" || len(tools) != len(Tools()) {
				t.Errorf("tools/list at %q with Accept %q: %d %s %.200s", rev, accept, a.status, a.ctype, a.raw)
			}
			c := rpcAt(t, url, rev, accept, "tools/call", map[string]any{"name": ToolNewRequestID, "arguments": map[string]any{}})
			sc, _ := c.result()["structuredContent"].(map[string]any)
			if c.status != 200 || c.ctype != "application/json" || sc["http_status"] != float64(200) {
				t.Errorf("tools/call at %q with Accept %q: %d %s %.200s", rev, accept, c.status, c.ctype, c.raw)
			}
		}
		a := rpcAt(t, url, rev, "text/event-stream", "tools/list", nil)
		if a.status != 400 || a.errorCode() != -32600 {
			t.Errorf("Accept text/event-stream only at %q: %d %s", rev, a.status, a.raw)
		}
	}
}

// TestListShapePerRevision: tools/list (and the other cached list
// results) carry ttlMs and cacheScope at 2026-07-28, which defines them,
// and not before, where no schema has them.
func TestListShapePerRevision(t *testing.T) {
	url := serve(t, Config{Service: testkit.NewFakeService()})
	for _, rev := range revisions {
		for _, method := range []string{"tools/list", "resources/list", "prompts/list"} {
			a := rpcAt(t, url, rev, bothTypes, method, nil)
			res := a.result()
			if res == nil {
				t.Errorf("%s at %q: no result: %s", method, rev, a.raw)
				continue
			}
			_, ttl := res["ttlMs"]
			_, scope := res["cacheScope"]
			if modern := rev >= "2026-07-28"; ttl != modern || scope != modern {
				t.Errorf("%s at %q: ttlMs present %v, cacheScope present %v, want %v: %.200s", method, rev, ttl, scope, modern, a.raw)
			}
		}
		a := rpcAt(t, url, rev, bothTypes, "tools/list", nil)
		tools, _ := a.result()["tools"].([]any)
		if len(tools) != len(Tools()) {
			t.Fatalf("tools/list at %q: %d tools", rev, len(tools))
		}
		for _, tool := range tools {
			m, _ := tool.(map[string]any)
			if m["name"] == nil || m["inputSchema"] == nil || m["outputSchema"] == nil {
				t.Errorf("tools/list at %q: tool without name or schemas: %v", rev, m)
			}
		}
	}
}

// TestSDKClientEveryRevision: the Go SDK's own client, pinned to each
// revision, still lists and calls the tools through the reshaping.
func TestSDKClientEveryRevision(t *testing.T) {
	url := serve(t, Config{Service: testkit.NewFakeService()})
	for _, rev := range revisions {
		if rev == "" {
			continue
		}
		cs := connect(t, url, rev, nil)
		tools, err := cs.ListTools(testCtx(t), nil)
		if err != nil || len(tools.Tools) != len(Tools()) {
			t.Fatalf("list tools at %s: %v (%d tools)", rev, err, len(tools.Tools))
		}
		if got := call(t, cs, ToolNewRequestID, nil); got.HTTPStatus != 200 {
			t.Errorf("new_request_id at %s: %s", rev, got.Text)
		}
	}
}

func TestWithoutCacheFields(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"result":{"ttlMs":0,"cacheScope":"public","tools":[]}}`, `{"id":1,"jsonrpc":"2.0","result":{"tools":[]}}`},
		{`[{"id":1,"result":{"ttlMs":5}},{"id":2,"error":{"code":-1}}]`, `[{"id":1,"result":{}},{"id":2,"error":{"code":-1}}]`},
		{`{"id":1,"result":{"tools":[{"ttlMs":1}]}}`, `{"id":1,"result":{"tools":[{"ttlMs":1}]}}`},
		{`{"id":1,"error":{"code":-32601}}`, `{"id":1,"error":{"code":-32601}}`},
		{`not json`, `not json`},
		{`{"id":1,"result":[1]}`, `{"id":1,"result":[1]}`},
	}
	for _, tt := range tests {
		if got := string(withoutCacheFields([]byte(tt.in))); got != tt.want {
			t.Errorf("withoutCacheFields(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
