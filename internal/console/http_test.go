package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/testkit/testnode"
)

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// client is a cookie-keeping HTTP client that does not follow redirects.
func client(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// get fetches u and returns the answer and its body.
func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func post(t *testing.T, c *http.Client, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	resp, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// signIn posts token through the sign-in form and returns the answer.
func signIn(t *testing.T, c *http.Client, base, token string) *http.Response {
	t.Helper()
	_, body := get(t, c, base+"/admin/login")
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF field on the sign-in form: %s", body)
	}
	resp, _ := post(t, c, base+"/admin/login", url.Values{"csrf": {m[1]}, "token": {token}})
	return resp
}

func TestConsoleOffWithoutToken(t *testing.T) {
	n := testnode.Start(t)
	for _, p := range []string{"/admin", "/admin/", "/admin/login", "/admin/entries", "/admin/static/console.css"} {
		resp, _ := get(t, client(t), n.URL()+p)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s without an admin token: %d, want 404", p, resp.StatusCode)
		}
	}
}

func TestConsoleHTTP(t *testing.T) {
	n := testnode.Start(t, testnode.WithAdminToken(testToken))
	base := n.URL()
	c := client(t)

	// Strangers are sent to the sign-in form; every page is no-store
	// under the public pages' CSP, forms allowed to post here only.
	for _, p := range []string{"/admin/entries", "/admin/settings", "/admin/cluster", "/admin/backup", "/admin/entries/x"} {
		resp, _ := get(t, c, base+p)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin/login" {
			t.Errorf("GET %s without a session: %d %s", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	resp, body := get(t, c, base+"/admin/login")
	if resp.Header.Get("Cache-Control") != "no-store" ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "form-action 'self'") ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("sign-in page headers: %v", resp.Header)
	}
	if !strings.Contains(body, `type="password"`) {
		t.Errorf("sign-in page: %s", body)
	}

	// A sign-in without the form's CSRF token is refused, right token or not.
	if resp, _ := post(t, client(t), base+"/admin/login", url.Values{"token": {testToken}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-in without CSRF: %d, want 403", resp.StatusCode)
	}
	if resp := signIn(t, c, base, testToken); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin/entries" {
		t.Fatalf("sign-in: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, p := range []string{"/admin/entries", "/admin/settings", "/admin/cluster", "/admin/entries?type=reply&visibility=hidden&actor=x&q=y"} {
		resp, body := get(t, c, base+p)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" || !csrfField.MatchString(body) {
			t.Errorf("GET %s signed in: %d %v", p, resp.StatusCode, resp.Header)
		}
	}
	if resp, _ := get(t, c, base+"/admin/entries/01a23d5d-dfad-7b9a-8724-3f6071b00367"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown entry: %d, want 404", resp.StatusCode)
	}
	if resp, _ := get(t, c, base+"/admin/nothing-here"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown page: %d, want 404", resp.StatusCode)
	}
	_, body = get(t, c, base+"/admin/settings")
	csrf := csrfField.FindStringSubmatch(body)[1]
	// Bad limits are refused with the service's words, and change nothing.
	resp, body = post(t, c, base+"/admin/settings", url.Values{"csrf": {csrf}, "per_source_count": {"0"}, "per_source_window": {"60"}, "global_count": {"10"}, "global_window": {"60"}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "per_source_limit.count") {
		t.Errorf("bad limit: %d %s", resp.StatusCode, body)
	}
	resp, _ = post(t, c, base+"/admin/settings", url.Values{"csrf": {csrf}, "per_source_count": {"7"}, "per_source_window": {"60"}, "global_count": {"900"}, "global_window": {"3600"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("save limits: %d", resp.StatusCode)
	}
	if st, _ := n.Settings(context.Background()); st.PerSourceLimit.Count != 7 || st.GlobalLimit.Count != 900 {
		t.Errorf("limits after saving: %+v", st)
	}
	// Unknown entry actions are 404, not a change.
	if resp, _ := post(t, c, base+"/admin/entries/x/purge", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown action: %d, want 404", resp.StatusCode)
	}

	// Signing out: the browser drops the cookie and is sent to sign in.
	resp, _ = post(t, c, base+"/admin/logout", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin/login" {
		t.Errorf("sign out: %d", resp.StatusCode)
	}
	if resp, _ := get(t, c, base+"/admin/entries"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after signing out: %d, want 303 to the sign-in form", resp.StatusCode)
	}
}

// TestSignInThrottleShared checks that failed sign-ins and failed bearer
// tokens spend one budget per source: past it the console answers 429
// with Retry-After, even to the right token, and so does the admin API.
func TestSignInThrottleShared(t *testing.T) {
	n := testnode.Start(t, testnode.WithAdminToken(testToken))
	base := n.URL()
	c := client(t)
	for i := range 5 {
		if resp := signIn(t, c, base, "wrong-token-0123456789abcdef"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i, resp.StatusCode)
		}
	}
	resp := signIn(t, c, base, testToken)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("sign-in past the budget: %d Retry-After %q, want 429", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/admin/settings", nil)
	req.Header.Set("Authorization", "Bearer wrong-token-0123456789abcdef")
	api, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	api.Body.Close()
	if api.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("admin API after failed sign-ins: %d, want 429", api.StatusCode)
	}
	// One attempt a second comes back: the right token then signs in.
	time.Sleep(1100 * time.Millisecond)
	if resp := signIn(t, c, base, testToken); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in after waiting: %d", resp.StatusCode)
	}
}
