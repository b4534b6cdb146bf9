package httpx_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
)

// prefixes parses trusted proxies as the --trusted-proxies flag does.
func prefixes(t *testing.T, ss ...string) []netip.Prefix {
	t.Helper()
	out, err := httpx.ParseTrustedProxies(strings.Join(ss, ","))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestParseTrustedProxies(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "", want: nil},
		{in: " , ,", want: nil},
		{in: "127.0.0.1", want: []string{"127.0.0.1/32"}},
		{in: "10.0.0.0/8,127.0.0.1", want: []string{"10.0.0.0/8", "127.0.0.1/32"}},
		{in: " 10.0.0.0/8 , 192.168.1.7 ,", want: []string{"10.0.0.0/8", "192.168.1.7/32"}},
		{in: "10.1.2.3/8", want: []string{"10.0.0.0/8"}}, // host bits masked
		{in: "172.16.0.0/12", want: []string{"172.16.0.0/12"}},
		{in: "0.0.0.0/0", want: []string{"0.0.0.0/0"}},
		{in: "::1", want: []string{"::1/128"}},
		{in: "2001:db8::/32", want: []string{"2001:db8::/32"}},
		{in: "2001:db8::1/32", want: []string{"2001:db8::/32"}},
		{in: "fd00::/8,10.0.0.1", want: []string{"fd00::/8", "10.0.0.1/32"}},
		{in: "::ffff:10.0.0.1", want: []string{"10.0.0.1/32"}},           // IPv4-mapped address
		{in: "::ffff:10.0.0.0/104", want: []string{"10.0.0.0/8"}},        // IPv4-mapped prefix
		{in: "::ffff:192.168.1.7/128", want: []string{"192.168.1.7/32"}}, // IPv4-mapped host prefix
		{in: "nope", wantErr: true},
		{in: "10.0.0.0/33", wantErr: true},
		{in: "10.0.0.0/x", wantErr: true},
		{in: "10.0.0", wantErr: true},
		{in: "10.0.0.256", wantErr: true},
		{in: "10.0.0.1:80", wantErr: true},
		{in: "[::1]", wantErr: true},
		{in: "::1/129", wantErr: true},
		{in: "10.0.0.1,bad", wantErr: true},
		{in: "10.0.0.1 10.0.0.2", wantErr: true},
		{in: "example.com", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := httpx.ParseTrustedProxies(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseTrustedProxies(%q) = %v, want an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseTrustedProxies(%q): %v", tt.in, err)
			}
			var gotS []string
			for _, p := range got {
				gotS = append(gotS, p.String())
			}
			if !reflect.DeepEqual(gotS, tt.want) {
				t.Fatalf("ParseTrustedProxies(%q) = %v, want %v", tt.in, gotS, tt.want)
			}
		})
	}
}

func TestClientAddr(t *testing.T) {
	trusted := []string{"10.0.0.0/8", "2001:db8::/32", "127.0.0.1/32"}
	tests := []struct {
		name    string
		proxies []string
		remote  string
		xff     []string // one X-Forwarded-For header per element
		want    string
	}{
		{"no proxies: peer", nil, "203.0.113.5:1234", nil, "203.0.113.5"},
		{"no proxies: XFF ignored", nil, "203.0.113.5:1234", []string{"198.51.100.7"}, "203.0.113.5"},
		{"no proxies: trusted-looking peer, XFF ignored", nil, "10.0.0.1:1234", []string{"198.51.100.7"}, "10.0.0.1"},
		{"untrusted peer: XFF ignored", trusted, "203.0.113.5:1234", []string{"198.51.100.7"}, "203.0.113.5"},
		{"untrusted peer: spoofed trusted XFF ignored", trusted, "203.0.113.5:1234", []string{"10.0.0.9"}, "203.0.113.5"},
		{"trusted peer: no XFF", trusted, "10.0.0.1:1234", nil, "10.0.0.1"},
		{"trusted peer: one hop", trusted, "10.0.0.1:1234", []string{"198.51.100.7"}, "198.51.100.7"},
		{"trusted peer: right-most untrusted hop wins", trusted, "10.0.0.1:1234", []string{"1.1.1.1, 198.51.100.7"}, "198.51.100.7"},
		{"trusted peer: trusted hops skipped", trusted, "10.0.0.1:1234", []string{"1.1.1.1, 198.51.100.7, 10.0.0.2, 10.0.0.3"}, "198.51.100.7"},
		{"trusted peer: no spaces", trusted, "10.0.0.1:1234", []string{"1.1.1.1,198.51.100.7,10.0.0.2"}, "198.51.100.7"},
		{"trusted peer: all hops trusted", trusted, "10.0.0.1:1234", []string{"10.0.0.3, 10.0.0.2"}, "10.0.0.3"},
		{"several XFF headers, in order", trusted, "10.0.0.1:1234", []string{"1.1.1.1", "198.51.100.7, 10.0.0.2"}, "198.51.100.7"},
		{"several XFF headers: last one untrusted", trusted, "10.0.0.1:1234", []string{"1.1.1.1, 10.0.0.2", "198.51.100.7"}, "198.51.100.7"},
		{"malformed hop next to the peer", trusted, "10.0.0.1:1234", []string{"1.1.1.1, garbage"}, "10.0.0.1"},
		{"malformed hop behind a trusted hop", trusted, "10.0.0.1:1234", []string{"1.1.1.1, garbage, 10.0.0.2"}, "10.0.0.2"},
		{"malformed hop left of the client is never reached", trusted, "10.0.0.1:1234", []string{"garbage, 198.51.100.7"}, "198.51.100.7"},
		{"hop with a port is malformed", trusted, "10.0.0.1:1234", []string{"198.51.100.7:5555"}, "10.0.0.1"},
		{"IPv4-mapped peer, trusted", trusted, "[::ffff:10.0.0.1]:1234", []string{"198.51.100.7"}, "198.51.100.7"},
		{"IPv4-mapped peer, untrusted", trusted, "[::ffff:203.0.113.5]:1234", []string{"198.51.100.7"}, "203.0.113.5"},
		{"IPv4-mapped peer, no proxies", nil, "[::ffff:203.0.113.5]:1234", nil, "203.0.113.5"},
		{"IPv4-mapped hop", trusted, "10.0.0.1:1234", []string{"::ffff:198.51.100.7"}, "198.51.100.7"},
		{"IPv4-mapped trusted hop skipped", trusted, "10.0.0.1:1234", []string{"198.51.100.7, ::ffff:10.0.0.2"}, "198.51.100.7"},
		{"mapped trusted prefix", []string{"::ffff:10.0.0.0/104"}, "10.0.0.1:1234", []string{"198.51.100.7"}, "198.51.100.7"},
		{"IPv6 peer, no proxies", nil, "[2001:db9::1]:443", nil, "2001:db9::1"},
		{"IPv6 peer, untrusted", trusted, "[2001:db9::1]:443", []string{"198.51.100.7"}, "2001:db9::1"},
		{"IPv6 trusted peer, IPv6 client", trusted, "[2001:db8::1]:443", []string{"2001:db9::5"}, "2001:db9::5"},
		{"IPv6 trusted peer, IPv4 client", trusted, "[2001:db8::1]:443", []string{"198.51.100.7, 2001:db8::2"}, "198.51.100.7"},
		{"IPv6 client written in long form is canonicalised", trusted, "10.0.0.1:1", []string{"2001:0DB9:0000::0005"}, "2001:db9::5"},
		{"peer without a port", trusted, "203.0.113.5", nil, "203.0.113.5"},
		{"unparseable peer", trusted, "@pipe", []string{"198.51.100.7"}, "@pipe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := httpx.ClientAddr(r, prefixes(t, tt.proxies...)); got != tt.want {
				t.Fatalf("ClientAddr = %q, want %q", got, tt.want)
			}
		})
	}
}

// Every address of an IPv6 /64 is one source: whoever has one can use
// any of the 2^64, and counted apart they would never meet a limit.
func TestSourceKey(t *testing.T) {
	for _, tt := range []struct {
		addr string
		bits int
		want string
	}{
		{"192.0.2.1", 0, "192.0.2.1"},
		{"192.0.2.1", 48, "192.0.2.1"},
		{"::ffff:192.0.2.1", 0, "192.0.2.1"},
		{"2001:db8:1:2:3:4:5:6", 0, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", 64, "2001:db8:1:2::/64"},
		{"2001:DB8:1:2::1", 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:3:4:5:6", 48, "2001:db8:1::/48"},
		{"2001:db8:1:2:3:4:5:6", 56, "2001:db8:1::/56"},
		{"2001:db8:1:2:3:4:5:6", 128, "2001:db8:1:2:3:4:5:6/128"},
		{"2001:db8:1:2:3:4:5:6", 200, "2001:db8:1:2::/64"},
		{"fe80::1%eth0", 64, "fe80::/64"},
		{"::1", 64, "::/64"},
		{"not-an-address", 64, "not-an-address"},
	} {
		if got := httpx.SourceKey(tt.addr, tt.bits); got != tt.want {
			t.Errorf("SourceKey(%q, %d) = %q, want %q", tt.addr, tt.bits, got, tt.want)
		}
	}
}

func TestSourceMiddleware(t *testing.T) {
	if got := httpx.Source(context.Background()); got != "" {
		t.Fatalf("Source of a bare context = %q", got)
	}
	if got := httpx.Source(httpx.WithSource(context.Background(), "192.0.2.1")); got != "192.0.2.1" {
		t.Fatalf("Source(WithSource) = %q", got)
	}
	tests := []struct {
		name    string
		proxies []netip.Prefix
		remote  string
		xff     string
		want    string
	}{
		{"no proxies", nil, "203.0.113.5:1", "198.51.100.7", "203.0.113.5"},
		{"trusted proxy", prefixes(t, "10.0.0.0/8"), "10.1.1.1:1", "198.51.100.7", "198.51.100.7"},
		{"untrusted peer", prefixes(t, "10.0.0.0/8"), "203.0.113.5:1", "198.51.100.7", "203.0.113.5"},
		{"ipv6 peer counts by its /64", nil, "[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:1", "", "2001:db8:1:2::/64"},
		{"ipv6 behind a trusted proxy", prefixes(t, "10.0.0.0/8"), "10.1.1.1:1", "2001:db8:1:2::99", "2001:db8:1:2::/64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			called := false
			h := httpx.SourceMiddleware(tt.proxies, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				called = true
				got = httpx.Source(r.Context())
				w.WriteHeader(http.StatusTeapot)
			}))
			r := httptest.NewRequest(http.MethodPost, "/api/v1/entries", nil)
			r.RemoteAddr = tt.remote
			r.Header.Set("X-Forwarded-For", tt.xff)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if !called || w.Code != http.StatusTeapot {
				t.Fatalf("next handler not called (status %d)", w.Code)
			}
			if got != tt.want {
				t.Fatalf("Source = %q, want %q", got, tt.want)
			}
		})
	}
}

// errorBody decodes a response body that must have exactly the shape
// {"error": {"code": "...", "message": "..."}}.
func errorBody(t *testing.T, body []byte) (code, message string) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	if len(top) != 1 || top["error"] == nil {
		t.Fatalf("body %s: want exactly one member, error", body)
	}
	var e map[string]any
	if err := json.Unmarshal(top["error"], &e); err != nil {
		t.Fatal(err)
	}
	if len(e) != 2 {
		t.Fatalf("error %s: want exactly code and message", top["error"])
	}
	code, ok1 := e["code"].(string)
	message, ok2 := e["message"].(string)
	if !ok1 || !ok2 {
		t.Fatalf("error %s: code and message must be strings", top["error"])
	}
	return code, message
}

func TestWriteError(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		status     int
		code       string
		message    string
		retryAfter string
	}{
		{"invalid request", restarea.Errorf(restarea.CodeInvalidRequest, "body is required"), 400, "invalid_request", "body is required", ""},
		{"not found", restarea.Errorf(restarea.CodeNotFound, "no such thread"), 404, "not_found", "no such thread", ""},
		{"parent not found", restarea.Errorf(restarea.CodeParentNotFound, "p"), 404, "parent_not_found", "p", ""},
		{"conflict", restarea.Errorf(restarea.CodeConflict, "c"), 409, "conflict", "c", ""},
		{"deleted", restarea.Errorf(restarea.CodeDeleted, "d"), 410, "deleted", "d", ""},
		{"too large", restarea.Errorf(restarea.CodePayloadTooLarge, "big"), 413, "payload_too_large", "big", ""},
		{"invalid parent", restarea.Errorf(restarea.CodeInvalidParent, "i"), 422, "invalid_parent", "i", ""},
		{"rate limited with delay", restarea.Errorf(restarea.CodeRateLimited, "slow").WithRetryAfter(1500 * time.Millisecond), 429, "rate_limited", "slow", "2"},
		{"rate limited without delay", restarea.Errorf(restarea.CodeRateLimited, "slow"), 429, "rate_limited", "slow", "1"},
		{"global rate limited", restarea.Errorf(restarea.CodeGlobalRateLimited, "g").WithRetryAfter(30 * time.Second), 429, "global_rate_limited", "g", "30"},
		{"writes disabled", restarea.Errorf(restarea.CodeWritesDisabled, "w"), 503, "writes_disabled", "w", "1"},
		{"unavailable", restarea.Errorf(restarea.CodeUnavailable, "u").WithRetryAfter(2 * time.Second), 503, "unavailable", "u", "2"},
		{"wrapped", fmt.Errorf("node: %w", restarea.Errorf(restarea.CodeUnavailable, "no leader")), 503, "unavailable", "no leader", "1"},
		{"plain error is internal and not described", errors.New("open /var/lib/secret: permission denied"), 500, "internal", "internal error", ""},
		{"unknown code", restarea.Errorf("weird", "w"), 500, "weird", "w", ""},
		{"message with markup is escaped", restarea.Errorf(restarea.CodeInvalidRequest, `<b>"x"</b>`), 400, "invalid_request", `<b>"x"</b>`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			httpx.WriteError(w, tt.err)
			if w.Code != tt.status {
				t.Fatalf("status = %d, want %d", w.Code, tt.status)
			}
			if got := w.Header().Get("Retry-After"); got != tt.retryAfter {
				t.Fatalf("Retry-After = %q, want %q", got, tt.retryAfter)
			}
			if got := w.Header().Get("Content-Type"); got != "application/json; charset=utf-8" {
				t.Fatalf("Content-Type = %q", got)
			}
			code, message := errorBody(t, w.Body.Bytes())
			if code != tt.code || message != tt.message {
				t.Fatalf("error = %q %q, want %q %q", code, message, tt.code, tt.message)
			}
			if strings.Contains(w.Body.String(), "permission denied") {
				t.Fatal("internal error text leaked to the client")
			}
		})
	}
}

func TestWriteData(t *testing.T) {
	type item struct {
		ID   string  `json:"id"`
		Next *string `json:"next_cursor"`
	}
	tests := []struct {
		name   string
		status int
		v      any
		want   string
	}{
		{"object", http.StatusCreated, item{ID: "x"}, `{"data":{"id":"x","next_cursor":null}}`},
		{"map", http.StatusOK, map[string]any{"replayed": true}, `{"data":{"replayed":true}}`},
		{"nil", http.StatusOK, nil, `{"data":null}`},
		{"list", http.StatusOK, []int{1, 2}, `{"data":[1,2]}`},
		{"non-ASCII kept", http.StatusOK, map[string]string{"title": "が"}, `{"data":{"title":"が"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			httpx.WriteData(w, tt.status, tt.v)
			if w.Code != tt.status {
				t.Fatalf("status = %d, want %d", w.Code, tt.status)
			}
			if got := w.Header().Get("Content-Type"); got != "application/json; charset=utf-8" {
				t.Fatalf("Content-Type = %q", got)
			}
			if got := w.Header().Get("Cache-Control"); got != "no-store" {
				t.Fatalf("Cache-Control = %q", got)
			}
			if w.Header().Get("Retry-After") != "" {
				t.Fatal("Retry-After on a success")
			}
			if got := w.Body.String(); got != tt.want+"\n" {
				t.Fatalf("body = %q, want %q", got, tt.want+"\n")
			}
		})
	}
}

func TestWriteJSONUnencodable(t *testing.T) {
	w := httptest.NewRecorder()
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"c": make(chan int)})
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status = %d, want 500", w.Code)
	}
	if code, msg := errorBody(t, w.Body.Bytes()); code != "internal" || msg != "internal error" {
		t.Fatalf("error = %q %q", code, msg)
	}
	if got := w.Header().Get("Content-Type"); got != "application/json; charset=utf-8" {
		t.Fatalf("Content-Type = %q", got)
	}
}
