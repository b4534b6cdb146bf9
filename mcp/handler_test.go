package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

// rawPost sends body to url as an MCP client would, with extra headers,
// and returns the status and the decoded JSON answer (nil if not JSON).
func rawPost(t *testing.T, url string, body []byte, header map[string]string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		m = map[string]any{"raw": string(b)}
	}
	return resp.StatusCode, m
}

func toolsCall(name string, rawArgs string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + rawArgs + `}}`)
}

func TestOrigin(t *testing.T) {
	url := serve(t, Config{Service: testkit.NewFakeService(), AllowedOrigins: []string{"https://agents.example"}})
	host := strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://")
	list := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	tests := []struct {
		origin string
		want   int
	}{
		{"", 200},
		{"http://" + host, 200},
		{"HTTP://" + strings.ToUpper(host), 200},
		{"https://agents.example", 200},
		{"https://agents.example/", 403}, // an Origin never has a path; exact match only
		{"https://evil.example", 403},
		{"http://" + host + ".evil.example", 403},
		{"null", 403},
		{"file://", 403},
		{"::not a url", 403},
	}
	for _, tt := range tests {
		t.Run(tt.origin, func(t *testing.T) {
			h := map[string]string{}
			if tt.origin != "" {
				h["Origin"] = tt.origin
			}
			status, body := rawPost(t, url, list, h)
			if status != tt.want {
				t.Errorf("status %d, want %d (%v)", status, tt.want, body)
			}
			if tt.want == 403 && body["error"] == nil {
				t.Errorf("403 without a JSON-RPC error: %v", body)
			}
		})
	}
}

// TestMalformedRequests sends what no SDK client would: each must get an
// error answer (JSON-RPC error, or a tool result of 400) and leave the
// server serving.
func TestMalformedRequests(t *testing.T) {
	fake := testkit.NewFakeService()
	url := serve(t, Config{Service: fake, MaxBodyBytes: 64 << 10})
	tests := []struct {
		name       string
		body       []byte
		wantStatus int
		wantRPC    bool   // a JSON-RPC error object
		wantTool   string // else: a tool result with 400 and this message part
	}{
		{"not json", []byte(`{"jsonrpc":"2.0","id":1,`), 400, true, ""},
		{"not an object", []byte(`[]`), 400, true, ""},
		{"empty", nil, 400, true, ""},
		{"binary", []byte{0xff, 0xfe, 0x00}, 400, true, ""},
		{"number", []byte(`42`), 400, true, ""},
		{"wrong version", []byte(`{"jsonrpc":"1.0","id":1,"method":"tools/list"}`), 400, true, ""},
		{"no version", []byte(`{"id":1,"method":"tools/list"}`), 400, true, ""},
		{"unknown method", []byte(`{"jsonrpc":"2.0","id":1,"method":"nope"}`), 200, true, ""}, // -32601, see TestUnknownMethod
		{"call without params", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`), 400, true, ""},
		{"too big", append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), 70<<10)...), 413, true, ""},
		{"invalid utf-8 in arguments", toolsCall("post_entry", "{\"request_id\":\""+uuid.NewString()+"\",\"type\":\"question\",\"title\":\"t\",\"body\":\"\xff\xfe\",\"actor\":{\"name\":\"n\"},\"submission_mode\":\"manual\"}"), 200, false, "UTF-8"},
		{"lone surrogate", toolsCall("post_entry", `{"request_id":"`+uuid.NewString()+`","type":"question","title":"t","body":"a\ud800b","actor":{"name":"n"},"submission_mode":"manual"}`), 200, false, "surrogate"},
		{"arguments not an object", toolsCall("get_thread", `"id"`), 200, false, "JSON object"},
		{"arguments null", toolsCall("list_threads", `null`), 200, false, ""},
		{"duplicate keys", toolsCall("get_thread", `{"id":"x","id":"y"}`), 200, false, "id is given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := rawPost(t, url, tt.body, nil)
			if status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %v", status, tt.wantStatus, body)
			}
			if tt.wantRPC {
				if e, _ := body["error"].(map[string]any); e == nil || e["code"] == nil {
					t.Errorf("want a JSON-RPC error, got %v", body)
				}
				return
			}
			res, _ := body["result"].(map[string]any)
			sc, _ := res["structuredContent"].(map[string]any)
			if tt.wantTool == "" {
				if sc["http_status"] != float64(200) {
					t.Errorf("want 200, got %v", body)
				}
				return
			}
			msg := mustJSON(sc["error"])
			if sc["http_status"] != float64(400) || res["isError"] != true || !strings.Contains(msg, tt.wantTool) {
				t.Errorf("want 400 isError mentioning %q, got %v", tt.wantTool, body)
			}
		})
	}
	if stored := len(fake.Entries()); stored != 0 {
		t.Errorf("malformed requests stored %d entries", stored)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405 (stateless: no standalone stream)", resp.StatusCode)
	}
}

// headerTransport adds fixed headers to every request, as a proxy would.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestSource checks that the per-source limit counts by the peer address,
// and by X-Forwarded-For only when the peer is a trusted proxy.
func TestSource(t *testing.T) {
	loop := netip.MustParsePrefix("127.0.0.0/8")
	other := netip.MustParsePrefix("10.0.0.0/8")
	tests := []struct {
		name    string
		proxies []netip.Prefix
		header  map[string]string
		want    string
	}{
		{"peer", nil, nil, "127.0.0.1"},
		{"forwarded from untrusted peer is ignored", []netip.Prefix{other}, map[string]string{"X-Forwarded-For": "203.0.113.9"}, "127.0.0.1"},
		{"forwarded from trusted proxy", []netip.Prefix{loop}, map[string]string{"X-Forwarded-For": "203.0.113.9"}, "203.0.113.9"},
		{"right-most untrusted hop", []netip.Prefix{loop, other}, map[string]string{"X-Forwarded-For": "198.51.100.1, 203.0.113.9, 10.1.2.3"}, "203.0.113.9"},
		{"other headers never count", nil, map[string]string{"X-Real-IP": "203.0.113.9", "Forwarded": "for=203.0.113.9"}, "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := testkit.NewFakeService()
			url := serve(t, Config{Service: fake, TrustedProxies: tt.proxies})
			cs := connect(t, url, "", &http.Client{Transport: headerTransport(tt.header)})
			if r := call(t, cs, ToolPostEntry, question(uuid.NewString(), "b")); r.HTTPStatus != 201 {
				t.Fatalf("post: %s", r.Text)
			}
			if got := lastMeta(fake).Source; got != tt.want {
				t.Errorf("source %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRebinding checks the DNS rebinding rule: a loopback listener refuses
// a foreign Host, unless the peer is a trusted proxy.
func TestRebinding(t *testing.T) {
	tests := []struct {
		name    string
		proxies []netip.Prefix
		host    string
		want    int
	}{
		{"loopback host", nil, "localhost", 200},
		{"foreign host", nil, "rest.example", 403},
		{"foreign host via trusted proxy", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, "rest.example", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := serve(t, Config{Service: testkit.NewFakeService(), TrustedProxies: tt.proxies})
			req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			req.Host = tt.host
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

// TestStatelessAcrossServers checks that a session needs no affinity: a
// client whose requests alternate between two independent handlers over
// one service works as with one.
func TestStatelessAcrossServers(t *testing.T) {
	fake := testkit.NewFakeService()
	a, b := serve(t, Config{Service: fake}), serve(t, Config{Service: fake})
	flip := &alternate{targets: []string{a, b}}
	cs := connect(t, a, "2025-11-25", &http.Client{Transport: flip})
	rid := uuid.NewString()
	first := call(t, cs, ToolPostEntry, question(rid, "b"))
	second := call(t, cs, ToolPostEntry, question(rid, "b"))
	if first.HTTPStatus != 201 || second.HTTPStatus != 200 || second.Data["replayed"] != true {
		t.Errorf("first %s, second %s", first.Text, second.Text)
	}
	if n := flip.n.Load(); n < 3 {
		t.Errorf("only %d requests were sent", n)
	}
}

// alternate sends each request to the next of its targets in turn, like a
// round-robin load balancer.
type alternate struct {
	targets []string
	n       atomic.Int64
}

func (a *alternate) RoundTrip(r *http.Request) (*http.Response, error) {
	target := a.targets[int(a.n.Add(1)-1)%len(a.targets)]
	r = r.Clone(r.Context())
	u, err := r.URL.Parse(target)
	if err != nil {
		return nil, err
	}
	r.URL, r.Host = u, u.Host
	return http.DefaultTransport.RoundTrip(r)
}

// TestSlowBody checks that a client that stops sending its body mid-way
// gets 408 after the call timeout instead of holding the handler.
func TestSlowBody(t *testing.T) {
	url := serve(t, Config{Service: testkit.NewFakeService(), CallTimeout: 300 * time.Millisecond})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(testTimeout))
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":", addr)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("status %d, want 408", resp.StatusCode)
	}
}

// A request refused before it was read gets a JSON-RPC error with its
// HTTP status and Retry-After.
func TestWriteRefusal(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteRefusal(rec, restarea.Errorf(restarea.CodeRateLimited, "too many").WithRetryAfter(time.Second))
	var body struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusTooManyRequests ||
		rec.Header().Get("Retry-After") != "1" || body.JSONRPC != "2.0" || string(body.ID) != "null" ||
		body.Error.Code != codeServerError || body.Error.Message != "too many" {
		t.Fatalf("%d %v %s (%v)", rec.Code, rec.Header(), rec.Body, err)
	}
}
