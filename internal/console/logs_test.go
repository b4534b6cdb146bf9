package console_test

import (
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/httpx"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// TestRefusalLogsSampled sends the console the floods of the probe:
// cross-site posts to /admin/settings and sign-ins past the throttle. Each
// is refused as before, but the log gets at most the sampler's budget
// (httpx.DefaultLogLinesPerSecond a second, plus its burst) for the time
// the flood took, not a line per refusal.
func TestRefusalLogsSampled(t *testing.T) {
	const n = 1000
	logs := &testkit.SyncBuffer{}
	node := testnode.Start(t, testnode.WithAdminToken(testToken), testnode.WithConfig(func(c *server.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}))
	base := node.URL()
	// One sign-in form serves every attempt: each refusal sets a new
	// nonce cookie, which this client does not keep.
	form, body := get(t, client(t), base+"/admin/login")
	csrf := csrfField.FindStringSubmatch(body)[1]
	var nonce *http.Cookie
	for _, ck := range form.Cookies() {
		if ck.Name == "restarea_admin_login" {
			nonce = ck
		}
	}
	start := time.Now()

	for i := range n {
		resp := postForm(t, base+"/admin/settings", url.Values{"csrf": {"x"}}, nil, "https://evil.example")
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-site post %d: %d, want 403", i, resp.StatusCode)
		}
	}
	throttled := 0
	for range n {
		resp := postForm(t, base+"/admin/login", url.Values{"csrf": {csrf}, "token": {"wrong-token-0123456789abcdef"}}, nonce, "")
		switch resp.StatusCode {
		case http.StatusTooManyRequests:
			throttled++
		case http.StatusUnauthorized:
		default:
			t.Fatalf("wrong sign-in: %d, want 401 or 429", resp.StatusCode)
		}
	}
	elapsed := time.Since(start)
	if throttled < n/2 {
		t.Fatalf("only %d of %d wrong sign-ins throttled", throttled, n)
	}
	lines := strings.Count(logs.String(), "console: ")
	most := httpx.DefaultLogLinesPerSecond + int(math.Ceil(elapsed.Seconds()*httpx.DefaultLogLinesPerSecond))
	if lines == 0 || lines > most {
		t.Fatalf("%d refusals in %s wrote %d console lines, want 1..%d:\n%s", 2*n, elapsed, lines, most, logs.String())
	}
	if !strings.Contains(logs.String(), "suppressed=") {
		t.Errorf("no line counts the refusals it dropped:\n%s", logs.String())
	}
	t.Logf("%d refusals in %s: %d console lines", 2*n, elapsed.Round(time.Millisecond), lines)
}
