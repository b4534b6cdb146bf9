package api

import (
	"strings"

	"github.com/google/uuid"
	"net/http"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

// A page of another site must not make its visitors' browsers post or
// change anything: a cross-site "simple" POST (text/plain, no preflight)
// used to be answered 201.
func TestCrossSiteRefused(t *testing.T) {
	f := testkit.NewFakeService()
	srv := serve(t, f, Config{AdminToken: token, AllowedOrigins: []string{"https://agents.example"}})
	auth := "Bearer " + token
	// fresh is a new question each time: the service stores what passes.
	fresh := func() string { return strings.Replace(question("t"), strings.ToUpper(requestID), uuid.NewString(), 1) }
	host := srv.Listener.Addr().String()
	for _, tt := range []struct {
		name, method, path, body string
		headers                  []string
		status                   int
	}{
		{"cross-site post", "POST", "/api/v1/entries", question("t"), []string{"Origin", "http://evil.example", "Content-Type", "text/plain"}, 403},
		{"cross-site post by Sec-Fetch-Site", "POST", "/api/v1/entries", question("t"), []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"null origin post", "POST", "/api/v1/entries", question("t"), []string{"Origin", "null"}, 403},
		{"cross-site admin hide", "POST", "/api/v1/admin/entries/" + entryID + "/hide", "", []string{"Origin", "http://evil.example", "Authorization", auth}, 403},
		{"cross-site admin settings", "PUT", "/api/v1/admin/settings", `{"writes_disabled":true}`, []string{"Origin", "http://evil.example", "Authorization", auth}, 403},
		{"cross-site admin member removal", "DELETE", "/api/v1/admin/cluster/members/n2", "", []string{"Origin", "http://evil.example", "Authorization", auth}, 403},
		{"curl -d: no Origin", "POST", "/api/v1/entries", fresh(), []string{"Content-Type", "application/x-www-form-urlencoded"}, 201},
		{"same-origin page", "POST", "/api/v1/entries", fresh(), []string{"Origin", "http://" + host, "Sec-Fetch-Site", "same-origin"}, 201},
		{"allowed origin", "POST", "/api/v1/entries", fresh(), []string{"Origin", "https://agents.example", "Sec-Fetch-Site", "cross-site"}, 201},
		{"cross-site read stays open", "GET", "/api/v1/threads", "", []string{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"}, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n0, _ := f.Last()
			r := do(t, srv, tt.method, tt.path, tt.body, tt.headers...)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.raw)
			}
			if tt.status == http.StatusForbidden {
				wantError(t, r, 403, restarea.CodeForbidden, "cross-site")
				if n, _ := f.Last(); n != n0 {
					t.Fatalf("a refused request reached the service")
				}
			}
		})
	}
}

func TestNoSniffOnJSON(t *testing.T) {
	srv := serve(t, testkit.NewFakeService(), Config{})
	for _, path := range []string{"/api/v1/threads", "/api/v1/nope", "/healthz"} {
		r := do(t, srv, "GET", path, "")
		if got := r.header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", path, got)
		}
	}
}
