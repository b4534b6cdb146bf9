package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/internal/web"
)

func getPage(t *testing.T, u string) (testkit.Response, string) {
	t.Helper()
	r := testkit.Get(t, u)
	return r, r.Body
}

// TestSearchPageOnRunningNode: the box on / and the results page of a
// running node, rendered on the server: matches marked, entry text
// escaped, hidden entries absent, the same CSP as every page; and in
// headless Chromium when it is installed.
func TestSearchPageOnRunningNode(t *testing.T) {
	n := testnode.Start(t)
	ctx := context.Background()
	post := func(title, body string) restarea.Entry {
		req := testkit.Question(title)
		req.Body = body
		return testnode.Post(t, n, req).Entry
	}
	q := post("Retries <b>bold</b>", "A timeout happened, then I retried <script>alert(1)</script> with the same request_id.")
	h := post("HIDDEN QUESTION", "a retried post that is hidden")
	if _, err := n.HideEntry(ctx, h.ID); err != nil {
		t.Fatal(err)
	}

	home, body := getPage(t, n.URL()+"/")
	if home.Status != 200 || !strings.Contains(body, `action="/search"`) || !strings.Contains(body, `name="q"`) {
		t.Fatalf("home has no search box: %d", home.Status)
	}
	u := n.URL() + "/search?q=" + url.QueryEscape("retrying")
	resp, page := getPage(t, u)
	if resp.Status != 200 {
		t.Fatalf("GET %s: %d %s", u, resp.Status, page)
	}
	if resp.Header.Get("Content-Security-Policy") == "" || resp.Header.Get("Content-Security-Policy") != home.Header.Get("Content-Security-Policy") {
		t.Fatalf("CSP %q, home's %q", resp.Header.Get("Content-Security-Policy"), home.Header.Get("Content-Security-Policy"))
	}
	for _, want := range []string{`href="/threads/` + q.ID + `"`, "<mark>retried</mark>", "&lt;script&gt;", "Retries &lt;b&gt;bold&lt;/b&gt;", `value="retrying"`} {
		if !strings.Contains(page, want) {
			t.Errorf("results page lacks %q", want)
		}
	}
	for _, bad := range []string{"HIDDEN QUESTION", "<script>alert", "<b>bold"} {
		if strings.Contains(page, bad) {
			t.Errorf("results page shows %q", bad)
		}
	}
	if resp, _ := getPage(t, n.URL()+"/search?q="+strings.Repeat("x", 501)); resp.Status != http.StatusBadRequest {
		t.Errorf("overlong q: %d, want 400", resp.Status)
	}
	if resp, page := getPage(t, n.URL()+"/search"); resp.Status != 200 || !strings.Contains(page, `name="q"`) {
		t.Errorf("empty search page: %d", resp.Status)
	}

	bin := web.FindBrowser()
	if bin == "" {
		t.Skip("SKIP: no chromium on PATH; the server-rendered page was checked above, the browser part is skipped")
	}
	bctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	dom := web.RunBrowser(bctx, t, bin, t.TempDir(), "--dump-dom", u)
	web.CheckText(t, dom, []string{"<mark>retried</mark>", "&lt;script&gt;alert(1)&lt;/script&gt;"}, []string{"HIDDEN QUESTION", "<script>alert(1)</script>"})
}
