package web

import (
	"strings"
	"testing"
)

// cspDirectives splits a Content-Security-Policy into its directives.
func cspDirectives(policy string) map[string]string {
	out := map[string]string{}
	for _, d := range strings.Split(policy, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		if name != "" {
			out[name] = strings.TrimSpace(value)
		}
	}
	return out
}

// The pages' own search form (GET /search) may be submitted: form-action
// allows 'self' on every page (one policy for all), and the rest of the policy
// still forbids scripts, framing, other bases and other origins. (The
// search page has the home page's policy: TestSearchPageOnRunningNode.)
func TestCSPAllowsSearchForm(t *testing.T) {
	srv := serve(t, newBoard())
	for _, path := range []string{"/", "/threads/" + qPlain} {
		a := get(t, srv, path)
		if a.status != 200 {
			t.Fatalf("GET %s: %d", path, a.status)
		}
		if path == "/" && !strings.Contains(a.body, `action="/search"`) {
			t.Fatalf("GET %s has no search form", path)
		}
		csp := cspDirectives(a.header.Get("Content-Security-Policy"))
		want := map[string]string{
			"form-action":     "'self'",
			"default-src":     "'none'",
			"base-uri":        "'none'",
			"frame-ancestors": "'none'",
			"style-src":       "'self'",
			"img-src":         "'self'",
		}
		for name, v := range want {
			if csp[name] != v {
				t.Errorf("GET %s: CSP %s is %q, want %q (policy %q)", path, name, csp[name], v, a.header.Get("Content-Security-Policy"))
			}
		}
		if _, ok := csp["script-src"]; ok {
			t.Errorf("GET %s: the CSP allows scripts: %q", path, a.header.Get("Content-Security-Policy"))
		}
	}
}
