package httpx

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

// TestForeignHost checks the DNS rebinding rule on both kinds of listener.
func TestForeignHost(t *testing.T) {
	allowed := []string{"https://Rest.Example/", "https://agents.example"}
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	public := &net.TCPAddr{IP: net.IPv4(203, 0, 113, 5), Port: 8080}
	for _, tt := range []struct {
		name    string
		local   net.Addr
		host    string
		peer    string
		headers []string
		refused bool
	}{
		{"loopback: rebound name", loopback, "evil.example:8080", "127.0.0.1:5000", nil, true},
		{"loopback: loopback address", loopback, "127.0.0.1:8080", "127.0.0.1:5000", nil, false},
		{"loopback: IPv6 loopback", loopback, "[::1]:8080", "127.0.0.1:5000", nil, false},
		{"loopback: localhost", loopback, "LOCALHOST:8080", "127.0.0.1:5000", nil, false},
		{"loopback: a .localhost name", loopback, "board.localhost:8080", "127.0.0.1:5000", nil, false},
		{"loopback: the public URL's host", loopback, "rest.example.", "127.0.0.1:5000", nil, false},
		{"loopback: an allowed origin's host", loopback, "agents.example", "127.0.0.1:5000", nil, false},
		{"loopback: from a trusted proxy", loopback, "evil.example", "10.1.2.3:5000", nil, false},
		{"public: curl under any name", public, "board.lan:8080", "198.51.100.7:5000", nil, false},
		{"public: a browser under an unknown name", public, "evil.example:8080", "198.51.100.7:5000", []string{"Origin", "http://evil.example:8080"}, true},
		{"public: Sec-Fetch-Site only", public, "evil.example:8080", "198.51.100.7:5000", []string{"Sec-Fetch-Site", "same-origin"}, true},
		{"public: a browser under the public URL's host", public, "rest.example", "198.51.100.7:5000", []string{"Origin", "https://rest.example"}, false},
		{"public: a page of an allowed origin", public, "board.lan:8080", "198.51.100.7:5000", []string{"Origin", "https://agents.example"}, false},
		{"public: a browser by IP", public, "203.0.113.5:8080", "198.51.100.7:5000", []string{"Origin", "http://203.0.113.5:8080"}, false},
		{"public: a browser behind a trusted proxy", public, "evil.example", "10.1.2.3:5000", []string{"Origin", "http://evil.example"}, false},
		{"no listener known: a browser under an unknown name", nil, "evil.example", "198.51.100.7:5000", []string{"Origin", "http://evil.example"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/api/v1/entries", nil)
			if tt.local != nil {
				r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tt.local))
			}
			r.Host, r.RemoteAddr = tt.host, tt.peer
			for i := 0; i+1 < len(tt.headers); i += 2 {
				r.Header.Set(tt.headers[i], tt.headers[i+1])
			}
			reason, refused := ForeignHost(r, allowed, proxies)
			if refused != tt.refused {
				t.Fatalf("refused %v (%q), want %v", refused, reason, tt.refused)
			}
		})
	}
}
