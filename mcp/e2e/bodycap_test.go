package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/mcp"
)

// escaped is JSON string text of n characters U+1F600, each written as a
// surrogate-pair escape: the longest spelling of the longest text, which
// an ASCII-only encoder (Python's json.dumps) produces.
func escaped(n int) string { return `"` + strings.Repeat(`\ud83d\ude00`, n) + `"` }

// largestPost is a valid reply with every text field at its maximum, every
// character escaped, in json.dumps' spacing.
func largestPost(parent string) string {
	return fmt.Sprintf(`{"request_id": %q, "type": "reply", "parent_id": %q, "title": %s, "body": %s, `+
		`"actor": {"name": %s, "model": %s, "trigger": %s}, "submission_mode": "autonomous"}`,
		uuid.NewString(), parent, escaped(restarea.MaxTitle), escaped(restarea.MaxBody),
		escaped(restarea.MaxName), escaped(restarea.MaxModel), escaped(restarea.MaxTrigger))
}

// The largest valid post fits both channels' body caps, which derive from
// the same limits: before, 20,000 escaped emoji got 413 over REST (64 KiB)
// and 201 over MCP (1 MiB). One character more is 400 on both, naming the
// field, not 413.
func TestLargestPostFitsBothChannels(t *testing.T) {
	n := testnode.Start(t)
	base := n.URL()
	q := viaREST(t, base, question(uuid.NewString()))
	if q.status != http.StatusCreated {
		t.Fatalf("question: %d", q.status)
	}
	parent := q.entry["id"].(string)

	post := func(body string) (int, []byte) {
		resp, err := http.Post(base+"/api/v1/entries", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	body := largestPost(parent)
	if len(body) > restarea.MaxPostJSONBytes {
		t.Fatalf("the largest post is %d bytes, over MaxPostJSONBytes %d", len(body), restarea.MaxPostJSONBytes)
	}
	if len(body) < restarea.MaxPostJSONBytes-4096 {
		t.Fatalf("the largest post is %d bytes: not the largest (cap %d)", len(body), restarea.MaxPostJSONBytes)
	}
	if status, b := post(body); status != http.StatusCreated {
		t.Fatalf("REST, largest post of %d bytes: %d %.300s", len(body), status, b)
	}
	over := strings.Replace(largestPost(parent), `"body": "`, `"body": "\ud83d\ude00`, 1)
	if status, b := post(over); status != http.StatusBadRequest || !bytes.Contains(b, []byte("body must be at most")) {
		t.Fatalf("REST, body one character over: %d %.300s", status, b)
	}

	for _, tc := range []struct {
		name, args string
		status     int
	}{
		{"largest", largestPost(parent), http.StatusCreated},
		{"body one character over", strings.Replace(largestPost(parent), `"body": "`, `"body": "\ud83d\ude00`, 1), http.StatusBadRequest},
	} {
		call := `{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "` + mcp.ToolPostEntry + `", "arguments": ` + tc.args + `}}`
		if len(call) > mcp.DefaultMaxBodyBytes {
			t.Fatalf("MCP %s: %d bytes, over the cap %d", tc.name, len(call), mcp.DefaultMaxBodyBytes)
		}
		status := mcpRaw(t, base+"/mcp", call)
		if status != tc.status {
			t.Fatalf("MCP %s: http_status %d, want %d", tc.name, status, tc.status)
		}
	}
}

// mcpRaw sends one JSON-RPC message as bytes (the SDK client would
// re-encode it) and returns the tool result's http_status.
func mcpRaw(t *testing.T, url, msg string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx(t), http.MethodPost, url, strings.NewReader(msg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		Result struct {
			StructuredContent struct {
				HTTPStatus int `json:"http_status"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil {
		t.Fatalf("MCP answer %d: %.300s", resp.StatusCode, b)
	}
	return out.Result.StructuredContent.HTTPStatus
}
