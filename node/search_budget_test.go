package node_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/mcp"
)

// searchAs sends GET path from the client at source (X-Forwarded-For,
// loopback being a trusted proxy) and returns the answer.
func searchAs(t *testing.T, base, path, source string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if source != "" {
		req.Header.Set("X-Forwarded-For", source)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The finding's query against a real node, and the per-source search
// rate: the query is refused before it runs (400 naming q, then cursor),
// without spending the source's budget; past the rate a source gets 429
// with Retry-After on REST, on the page and from the MCP tool, which
// share one budget per source, while another source is answered.
func TestSearchBudgetOnNode(t *testing.T) {
	const rate = 3
	n := testnode.Start(t, testnode.WithConfig(func(c *server.Config) {
		c.SearchRatePerSource = restarea.Limit{Count: rate, WindowSeconds: 3600}
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	}))
	base := n.URL()
	restPost(t, base, searchQuestion("Retries", "A timeout, then a retry with the same request_id.", "budget"))

	common := strings.Fields(`able acid aged also area army away baby back ball band bank base bath bear beat
bell belt best bill bird blow blue boat body bomb bond bone book boom born boss both bowl bulk burn bush busy
call calm camp card care case cash cast cell chat chip city club coal coat code cold come cook cool cope copy
core cost crew crop dark data date dawn days dead deal dean dear debt deep deny desk dial diet disk does done
door dose down draw`)[:80]
	deep := base64.RawURLEncoding.EncodeToString([]byte("o10000"))
	for _, bad := range []struct {
		params url.Values
		field  string
	}{
		{url.Values{"q": {strings.Join(common, " ")}, "cursor": {deep}, "limit": {"50"}}, "q"},
		{url.Values{"q": {"timeout"}, "cursor": {deep}, "limit": {"50"}}, "cursor"},
	} {
		resp, body := searchAs(t, base, "/api/v1/search?"+bad.params.Encode(), "203.0.113.1")
		var a searchAnswer
		json.Unmarshal([]byte(body), &a)
		if resp.StatusCode != http.StatusBadRequest || a.Error == nil || a.Error.Code != "invalid_request" || !strings.HasPrefix(a.Error.Message, bad.field+" ") {
			t.Fatalf("%v: %d %s, want 400 naming %s", bad.params, resp.StatusCode, body, bad.field)
		}
	}

	path := "/api/v1/search?q=retry"
	for i := range rate {
		if resp, body := searchAs(t, base, path, "203.0.113.1"); resp.StatusCode != http.StatusOK {
			t.Fatalf("search %d within the rate: %d %s", i+1, resp.StatusCode, body)
		}
	}
	resp, body := searchAs(t, base, path, "203.0.113.1")
	var a searchAnswer
	json.Unmarshal([]byte(body), &a)
	if s, _ := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != http.StatusTooManyRequests || s < 1 || a.Error == nil || a.Error.Code != "rate_limited" {
		t.Fatalf("search over the rate: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp, _ := searchAs(t, base, "/search?q=retry", "203.0.113.1"); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("the page over the rate: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp, body := searchAs(t, base, path, "203.0.113.2"); resp.StatusCode != http.StatusOK {
		t.Fatalf("another source: %d %s", resp.StatusCode, body)
	}

	// The MCP tool counts against the same budget: loopback's own.
	for range rate {
		searchAs(t, base, path, "")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "budget", Version: "1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolSearch, Arguments: map[string]any{"q": "retry"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var r struct {
		HTTPStatus int `json:"http_status"`
		searchAnswer
	}
	json.Unmarshal(b, &r)
	if r.HTTPStatus != http.StatusTooManyRequests || r.Error == nil || r.Error.Code != "rate_limited" {
		t.Fatalf("search_entries over the rate: %s", b)
	}
}
