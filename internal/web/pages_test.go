package web

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

func TestPages(t *testing.T) {
	srv := serve(t, newBoard())
	tests := []struct {
		name   string
		method string
		path   string
		status int
		ctype  string
		cache  string
		want   []string
		bad    []string
	}{
		{
			name: "home lists public threads", path: "/", status: 200, ctype: typeHTML, cache: cachePage,
			want: []string{`<html lang="en">`, `href="/threads/` + qPlain + `"`, "How do retries work?", japaneseTitle,
				"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; co", `<link rel="canonical" href="` + testBase + `/">`},
			bad: []string{"HIDDEN QUESTION TITLE", qHidden, "<script>"},
		},
		{
			name: "thread shows question and public replies", path: "/threads/" + qPlain, status: 200, ctype: typeHTML, cache: cachePage,
			want: []string{"How do retries work?", "<p>line one<br>\nline two</p>", `id="reply-` + rFirst + `"`, "First reply body",
				`id="reply-` + rTricky + `"`, "&lt;b&gt;bold?&lt;/b&gt;", `href="/replies/` + rFirst + `"`,
				`href="/threads/` + qPlain + `.md"`, "2 replies", "2026-03-01 09:30 UTC", `datetime="2026-03-01T09:30:00Z"`,
				"posted by an agent on its own", "model-q", "a user asked"},
			bad: []string{"HIDDEN REPLY BODY", rHidden, "<b>bold?</b>"},
		},
		{
			name: "thread id in upper case", path: "/threads/" + strings.ToUpper(qPlain), status: 200, ctype: typeHTML, cache: cachePage,
			want: []string{"How do retries work?", `<link rel="canonical" href="` + testBase + "/threads/" + qPlain + `">`},
		},
		{
			name: "script title is text", path: "/threads/" + qScript, status: 200, ctype: typeHTML, cache: cachePage,
			want: []string{"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; co", "&lt;img src=x onerror=alert(1)&gt;",
				"<title>&lt;script&gt;"},
			bad: []string{"<script", "<img"},
		},
		{
			name: "japanese intact", path: "/threads/" + qJapanese, status: 200, ctype: typeHTML, cache: cachePage,
			want: []string{japaneseTitle, "<p>二重投稿を避けたい。<br>\n改行も保つ。</p>", "No replies yet."},
		},
		{
			name: "hidden thread", path: "/threads/" + qHidden, status: 404, ctype: typeHTML, cache: cacheNoStore,
			want: []string{"Not found"}, bad: []string{"HIDDEN QUESTION TITLE", "REPLY OF HIDDEN QUESTION"},
		},
		{
			name: "a reply is not a thread", path: "/threads/" + rFirst, status: 404, ctype: typeHTML, cache: cacheNoStore,
		},
		{
			name: "thread id not a uuid", path: "/threads/nope", status: 404, ctype: typeHTML, cache: cacheNoStore,
			want: []string{"Not found"},
		},
		{
			name: "thread id with markup", path: "/threads/%3Cscript%3E", status: 404, ctype: typeHTML, cache: cacheNoStore,
			bad: []string{"<script>"},
		},
		{
			name: "reply permalink", path: "/replies/" + rFirst, status: 200, ctype: typeHTML, cache: cachePage,
			want: []string{"First reply body", `href="/threads/` + qPlain + `#reply-` + rFirst + `"`, "How do retries work?",
				`<link rel="canonical" href="` + testBase + "/replies/" + rFirst + `">`},
		},
		{
			name: "hidden reply permalink", path: "/replies/" + rHidden, status: 404, ctype: typeHTML, cache: cacheNoStore,
			bad: []string{"HIDDEN REPLY BODY"},
		},
		{
			name: "reply of a hidden question", path: "/replies/" + rOrphan, status: 404, ctype: typeHTML, cache: cacheNoStore,
			bad: []string{"REPLY OF HIDDEN QUESTION", "HIDDEN QUESTION TITLE"},
		},
		{
			name: "reply id not a uuid", path: "/replies/x", status: 404, ctype: typeHTML, cache: cacheNoStore,
		},
		{
			name: "unknown path", path: "/no/such/page", status: 404, ctype: typeHTML, cache: cacheNoStore,
			want: []string{"Not found", `href="/"`},
		},
		{
			name: "trailing slash is another path", path: "/threads/" + qPlain + "/", status: 404, ctype: typeHTML, cache: cacheNoStore,
		},
		{
			name: "bad cursor", path: "/?cursor=%3Cbad%3E", status: 400, ctype: typeHTML, cache: cacheNoStore,
			want: []string{"Bad request", "cursor is not valid"}, bad: []string{"<bad>"},
		},
		{
			name: "over-long cursor", path: "/?cursor=" + strings.Repeat("a", 2000), status: 400, ctype: typeHTML, cache: cacheNoStore,
		},
		{
			name: "post to a page", method: http.MethodPost, path: "/threads/" + qPlain, status: 405, ctype: typeHTML, cache: cacheNoStore,
		},
		{
			name: "guide", path: "/guide", status: 200, ctype: typeHTML, cache: cacheDoc,
			want: []string{`<article id="en" class="guide" lang="en">`, `<article id="ja" class="guide" lang="ja">`,
				"Why a timed-out write is ambiguous", "タイムアウトした書き込みはなぜ判断できないのか",
				"POST " + testBase + "/api/v1/entries", "unconfirmed", "未確認", "90 days", "<code>request_id</code>",
				`<a href="/api/v1/openapi.yaml">OpenAPI</a>`},
		},
		{
			name: "guide markdown", path: "/guide.md", status: 200, ctype: typeMarkdown, cache: cacheDoc,
			want: []string{"## Why a timed-out write is ambiguous", "## それでも残る不確かさ", "writes_disabled", testBase + "/mcp"},
			bad:  []string{"{base}"},
		},
		{
			name: "llms.txt", path: "/llms.txt", status: 200, ctype: typeText, cache: cacheDoc,
			want: []string{"# rest.area", testBase + "/mcp", testBase + "/api/v1/entries", testBase + "/guide.md", "new_request_id",
				"GET " + testBase + "/api/v1/search?q=", "search_entries", testBase + "/api/v1/openapi.yaml", "restarea://guide/retries"},
			bad: []string{"{base}"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			a := do(t, srv, method, tc.path, nil)
			if a.status != tc.status {
				t.Fatalf("status %d, want %d; body:\n%s", a.status, tc.status, a.body)
			}
			if got := a.header.Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type %q, want %q", got, tc.ctype)
			}
			if got := a.header.Get("Cache-Control"); got != tc.cache {
				t.Errorf("Cache-Control %q, want %q", got, tc.cache)
			}
			if a.header.Get("X-Content-Type-Options") != "nosniff" || a.header.Get("Content-Security-Policy") == "" {
				t.Errorf("security headers missing: %v", a.header)
			}
			if tc.status >= 400 && a.header.Get("ETag") != "" {
				t.Errorf("error answer has an ETag")
			}
			if tc.status == 200 && a.header.Get("ETag") == "" {
				t.Errorf("public page has no ETag")
			}
			checkText(t, a.body, tc.want, tc.bad)
		})
	}
}

func TestServiceErrors(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		status     int
		retryAfter string
		bad        string
	}{
		{"unavailable", restarea.Errorf(restarea.CodeUnavailable, "no leader").WithRetryAfter(2 * time.Second), 503, "2", "no leader"},
		{"unavailable without delay", restarea.Errorf(restarea.CodeUnavailable, "no quorum"), 503, "1", "no quorum"},
		{"rate limited", restarea.Errorf(restarea.CodeRateLimited, "slow down").WithRetryAfter(3 * time.Second), 429, "3", ""},
		{"internal", errors.New("bolt: database file /secret/path is corrupt"), 500, "", "/secret/path"},
		{"conflict is not a read answer", restarea.Errorf(restarea.CodeConflict, "odd"), 500, "", "odd"},
		{"deleted looks missing", restarea.Errorf(restarea.CodeDeleted, "gone"), 404, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newBoard()
			f.FailWith(tc.err)
			srv := serve(t, f)
			for _, path := range []string{"/", "/threads/" + qPlain, "/replies/" + rFirst, "/threads/" + qPlain + ".md"} {
				a := get(t, srv, path)
				if a.status != tc.status {
					t.Errorf("%s: status %d, want %d", path, a.status, tc.status)
				}
				if got := a.header.Get("Retry-After"); got != tc.retryAfter {
					t.Errorf("%s: Retry-After %q, want %q", path, got, tc.retryAfter)
				}
				if got := a.header.Get("Cache-Control"); got != cacheNoStore {
					t.Errorf("%s: Cache-Control %q", path, got)
				}
				if tc.bad != "" && strings.Contains(a.body, tc.bad) {
					t.Errorf("%s: body shows internal detail %q", path, tc.bad)
				}
			}
		})
	}
}

func TestHomePaging(t *testing.T) {
	f := testkit.NewFakeService()
	f.SetPageSize(7)
	for i := 0; i < 20; i++ {
		addQuestion(f, fakeID(3, i), fmt.Sprintf("Thread number %02d", i), "body")
	}
	srv := serve(t, f)
	seen := map[string]bool{}
	path := "/"
	for pages := 0; pages < 10 && path != ""; pages++ {
		a := get(t, srv, path)
		if a.status != 200 {
			t.Fatalf("%s: status %d", path, a.status)
		}
		for i := 0; i < 20; i++ {
			title := fmt.Sprintf("Thread number %02d", i)
			if strings.Contains(a.body, title) {
				if seen[title] {
					t.Errorf("%s repeated", title)
				}
				seen[title] = true
			}
		}
		if pages > 0 && !strings.Contains(a.body, `<a href="/">Newest threads</a>`) {
			t.Errorf("page %d has no link back to the newest threads", pages)
		}
		path = ""
		if _, rest, ok := strings.Cut(a.body, `<a rel="next" href="`); ok {
			path, _, _ = strings.Cut(rest, `"`)
			path = strings.ReplaceAll(path, "&amp;", "&")
		}
	}
	if len(seen) != 20 {
		t.Errorf("saw %d threads over all pages, want 20", len(seen))
	}
}

func TestETag(t *testing.T) {
	f := newBoard()
	srv := serve(t, f)
	for _, path := range []string{"/", "/threads/" + qPlain, "/threads/" + qPlain + ".md", "/replies/" + rFirst, "/guide", "/guide.md", "/llms.txt", assetURL("style.css")} {
		t.Run(path, func(t *testing.T) {
			first := get(t, srv, path)
			etag := first.header.Get("ETag")
			if first.status != 200 || etag == "" {
				t.Fatalf("status %d, ETag %q", first.status, etag)
			}
			tests := []struct {
				inm    string
				status int
			}{
				{etag, 304},
				{"W/" + etag, 304},
				{`"other", ` + etag, 304},
				{"*", 304},
				{`"other"`, 200},
			}
			for _, tc := range tests {
				a := do(t, srv, http.MethodGet, path, map[string]string{"If-None-Match": tc.inm})
				if a.status != tc.status {
					t.Errorf("If-None-Match %s: status %d, want %d", tc.inm, a.status, tc.status)
				}
				if tc.status == 304 && (a.body != "" || a.header.Get("ETag") != etag) {
					t.Errorf("304 with body %q, ETag %q", a.body, a.header.Get("ETag"))
				}
			}
			head := do(t, srv, http.MethodHead, path, nil)
			if head.status != 200 || head.body != "" || head.header.Get("ETag") != etag {
				t.Errorf("HEAD: status %d, body %q, ETag %q", head.status, head.body, head.header.Get("ETag"))
			}
		})
	}
	// A new reply changes the page, so the old tag no longer matches.
	old := get(t, srv, "/threads/"+qPlain).header.Get("ETag")
	addReply(f, qPlain, fakeID(2, 9), "", "a later reply")
	a := do(t, srv, http.MethodGet, "/threads/"+qPlain, map[string]string{"If-None-Match": old})
	if a.status != 200 || !strings.Contains(a.body, "a later reply") {
		t.Errorf("after a new reply: status %d", a.status)
	}
}

func TestStatic(t *testing.T) {
	srv := serve(t, newBoard())
	tests := []struct {
		path   string
		status int
		ctype  string
		cache  string
	}{
		{assetURL("style.css"), 200, "text/css; charset=utf-8", cacheAsset},
		{"/static/style.css", 200, "text/css; charset=utf-8", cacheDoc},
		{"/static/style.css?v=old", 200, "text/css; charset=utf-8", cacheDoc},
		{assetURL("icon.svg"), 200, "image/svg+xml", cacheAsset},
		{"/static/nothing.css", 404, typeHTML, cacheNoStore},
	}
	for _, tc := range tests {
		a := get(t, srv, tc.path)
		if a.status != tc.status || a.header.Get("Content-Type") != tc.ctype || a.header.Get("Cache-Control") != tc.cache {
			t.Errorf("%s: %d %q %q, want %d %q %q", tc.path, a.status, a.header.Get("Content-Type"), a.header.Get("Cache-Control"), tc.status, tc.ctype, tc.cache)
		}
	}
	page := get(t, srv, "/")
	if !strings.Contains(page.body, `href="`+strings.ReplaceAll(assetURL("style.css"), "&", "&amp;")+`"`) {
		t.Errorf("page does not link the versioned stylesheet %s", assetURL("style.css"))
	}
}
