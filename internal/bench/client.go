package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/restarea/restarea"
)

// Client speaks to nodes over REST and MCP, the way an agent does. Each
// load client sends X-Forwarded-For with its own address, so that with
// --trusted-proxies covering loopback every client is its own source (as
// many agents would be); a node that does not trust loopback ignores it.
type Client struct {
	HTTP *http.Client
}

// NewClient returns a client with a connection pool sized for clients
// concurrent callers.
func NewClient(clients int) *Client {
	tr := &http.Transport{
		MaxIdleConns:        4 * clients,
		MaxIdleConnsPerHost: 2 * clients,
		IdleConnTimeout:     time.Minute,
	}
	return &Client{HTTP: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// Posted is the part of a post answer the bench checks.
type Posted struct {
	Status   int
	ID       string
	Replayed bool
}

// sourceOf is the address load client c posts from.
func sourceOf(c int) string { return fmt.Sprintf("10.250.%d.%d", c/250, c%250+1) }

func (cl *Client) do(ctx context.Context, method, url string, c int, body []byte, hdr map[string]string) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-Forwarded-For", sourceOf(c))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := cl.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// PostREST sends POST /api/v1/entries as load client c.
func (cl *Client) PostREST(ctx context.Context, base string, c int, req restarea.PostRequest) (Posted, error) {
	body, _ := json.Marshal(req)
	status, b, err := cl.do(ctx, http.MethodPost, base+"/api/v1/entries", c, body, nil)
	if err != nil {
		return Posted{}, err
	}
	var out struct {
		Data struct {
			ID       string `json:"id"`
			Replayed bool   `json:"replayed"`
		} `json:"data"`
	}
	json.Unmarshal(b, &out)
	return Posted{Status: status, ID: out.Data.ID, Replayed: out.Data.Replayed}, nil
}

// PostMCP calls the post_entry tool on base's /mcp as load client c: one
// JSON-RPC tools/call per HTTP request, as the stateless endpoint allows.
func (cl *Client) PostMCP(ctx context.Context, base string, c int, req restarea.PostRequest) (Posted, error) {
	var out struct {
		Data struct {
			ID       string `json:"id"`
			Replayed bool   `json:"replayed"`
		} `json:"data"`
	}
	status, err := cl.CallTool(ctx, base, c, "post_entry", req, &out)
	return Posted{Status: status, ID: out.Data.ID, Replayed: out.Data.Replayed}, err
}

// CallTool calls an MCP tool and decodes its structuredContent into out;
// it returns the http_status the tool reported.
func (cl *Client) CallTool(ctx context.Context, base string, c int, tool string, args, out any) (int, error) {
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args},
	})
	status, b, err := cl.do(ctx, http.MethodPost, base+"/mcp", c, body, map[string]string{
		"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-06-18",
	})
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("mcp: HTTP %d: %s", status, strings.TrimSpace(string(b)))
	}
	var rpc struct {
		Result struct {
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &rpc); err != nil {
		return 0, fmt.Errorf("mcp: %v: %.200s", err, b)
	}
	if rpc.Error != nil {
		return 0, fmt.Errorf("mcp: %s", rpc.Error.Message)
	}
	var sc struct {
		HTTPStatus int `json:"http_status"`
	}
	json.Unmarshal(rpc.Result.StructuredContent, &sc)
	if out != nil {
		json.Unmarshal(rpc.Result.StructuredContent, out)
	}
	return sc.HTTPStatus, nil
}

// Get fetches base+path as load client c and returns the status and body.
func (cl *Client) Get(ctx context.Context, base, path string, c int) (int, []byte, error) {
	return cl.do(ctx, http.MethodGet, base+path, c, nil, nil)
}

// ReplyPage fetches one page of a thread's replies over REST and returns
// the number of replies and the next cursor ("" on the last page).
func (cl *Client) ReplyPage(ctx context.Context, base, thread, cursor string, limit, c int) (int, string, error) {
	path := fmt.Sprintf("/api/v1/threads/%s/replies?limit=%d", thread, limit)
	if cursor != "" {
		path += "&cursor=" + cursor
	}
	status, b, err := cl.Get(ctx, base, path, c)
	if err != nil {
		return 0, "", err
	}
	if status != http.StatusOK {
		return 0, "", fmt.Errorf("list_replies: HTTP %d: %.200s", status, b)
	}
	var out struct {
		Data struct {
			Replies    []json.RawMessage `json:"replies"`
			NextCursor *string           `json:"next_cursor"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return 0, "", err
	}
	next := ""
	if out.Data.NextCursor != nil {
		next = *out.Data.NextCursor
	}
	return len(out.Data.Replies), next, nil
}

// Gauge reads one unlabelled gauge from base's /metrics.
func (cl *Client) Gauge(ctx context.Context, base, name string) (float64, error) {
	status, b, err := cl.Get(ctx, base, "/metrics", 0)
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("/metrics: HTTP %d", status)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			var v float64
			_, err := fmt.Sscan(rest, &v)
			return v, err
		}
	}
	return 0, fmt.Errorf("/metrics: no %s", name)
}

// checkPost turns an unexpected answer into an error.
func checkPost(p Posted, err error, want ...int) error {
	if err != nil {
		return err
	}
	for _, w := range want {
		if p.Status == w {
			return nil
		}
	}
	return fmt.Errorf("post: HTTP %d, want %v", p.Status, want)
}
