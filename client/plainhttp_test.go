package client

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

// An Admin refuses plain http:// beyond loopback unless allowed, at
// NewAdmin and again for any request it would send (a member's URL), and
// takes loopback and https:// as they are.
func TestAdminPlainHTTP(t *testing.T) {
	const token = "plain-http-test-token-0123"
	for _, srv := range []string{"http://127.0.0.1:8080", "http://127.8.0.1", "http://[::1]:8080", "http://localhost:8080", "https://192.0.2.1", "https://board.example"} {
		if _, err := NewAdmin(token, Options{Servers: []string{srv}}); err != nil {
			t.Errorf("%s: %v", srv, err)
		}
	}
	for _, srv := range []string{"http://192.0.2.1:8080", "http://board.example", "http://[2001:db8::1]:8080", "http://localhost.board.example", "HTTP://10.0.0.1"} {
		_, err := NewAdmin(token, Options{Servers: []string{"http://127.0.0.1:1", srv}})
		if !errors.Is(err, ErrPlainHTTP) {
			t.Errorf("%s: %v, want ErrPlainHTTP", srv, err)
		}
		if _, err := NewAdmin(token, Options{Servers: []string{srv}, AllowPlainHTTP: true}); err != nil {
			t.Errorf("%s with AllowPlainHTTP: %v", srv, err)
		}
	}

	// The last guard: whatever URL a request is built from, the token
	// does not leave in clear.
	a, err := NewAdmin(token, Options{Servers: []string{"http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://192.0.2.1:8080/api/v1/cluster", nil)
	if _, err := a.c.opts.HTTPClient.Do(req); !errors.Is(err, ErrPlainHTTP) {
		t.Fatalf("a request to a plain http:// member: %v, want ErrPlainHTTP", err)
	}
	v := NodeView{ID: "n2", URL: "http://192.0.2.1:8080"}
	a.nodeView(context.Background(), &v)
	if v.Reachable || v.Error == "" || v.Error[:9] != "not asked" {
		t.Fatalf("member view: %+v", v)
	}
}
