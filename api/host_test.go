package api

import (
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
	"github.com/restarea/restarea/internal/testkit"
)

// TestRebindingHostRefused checks the Host rule against DNS rebinding on
// the REST writes, as /mcp has it: the test server listens on loopback, so
// a post naming a Host that is none of the node's names (a rebound
// evil.example) is refused 403 with the Host in the message, before the
// service sees it; curl's default Host, localhost, the public URL's host
// and a trusted proxy's Host are served; reads are not concerned.
func TestRebindingHostRefused(t *testing.T) {
	f := testkit.NewFakeService()
	srv := serve(t, f, Config{AllowedOrigins: []string{"https://rest.example"}})
	fresh := func() string { return strings.Replace(question("t"), strings.ToUpper(requestID), uuid.NewString(), 1) }
	send := func(srvURL, method, host, body string, headers ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srvURL+"/api/v1/entries", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if method == http.MethodGet {
			req.URL.Path = "/api/v1/threads"
		}
		if host != "" {
			req.Host = host
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(raw)
	}
	_, port, _ := strings.Cut(srv.Listener.Addr().String(), ":")
	for _, tt := range []struct {
		name, method, host string
		headers            []string
		status             int
	}{
		{"rebound name", "POST", "evil.example:" + port, nil, 403},
		{"rebound name, same-origin page", "POST", "evil.example:" + port, []string{"Origin", "http://evil.example:" + port, "Sec-Fetch-Site", "same-origin"}, 403},
		{"curl's default Host", "POST", "", nil, 201},
		{"localhost", "POST", "localhost:" + port, nil, 201},
		{"the public URL's host", "POST", "rest.example", nil, 201},
		{"reads are not concerned", "GET", "evil.example:" + port, nil, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n0, _ := f.Last()
			body := ""
			if tt.method == "POST" {
				body = fresh()
			}
			status, raw := send(srv.URL, tt.method, tt.host, body, tt.headers...)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %s", status, tt.status, raw)
			}
			if status != http.StatusForbidden {
				return
			}
			var e struct{ Error httpx.ErrorBody }
			if err := json.Unmarshal([]byte(raw), &e); err != nil || e.Error.Code != restarea.CodeForbidden || !strings.Contains(e.Error.Message, `"evil.example:`+port+`"`) {
				t.Fatalf("refusal %s does not name the Host", raw)
			}
			if n, _ := f.Last(); n != n0 {
				t.Fatal("a refused post reached the service")
			}
		})
	}

	// Behind a trusted proxy the proxy chose the Host.
	proxied := serve(t, f, Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if status, raw := send(proxied.URL, "POST", "board.example", fresh()); status != http.StatusCreated {
		t.Fatalf("a trusted proxy's Host: %d %s", status, raw)
	}
}
