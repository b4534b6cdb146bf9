package web_test

import (
	"bytes"
	"context"
	"html"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/internal/web"
)

// TestBrowserOnRunningNode loads a thread page from a running node (real
// raft and bbolt behind it) in headless Chromium: the DOM shows the
// question's title and its public reply, not the hidden one, the reply's
// Markdown rendered (a fence as <pre><code>, a link with its rel), and
// screenshots are written to the test's temporary directory.
func TestBrowserOnRunningNode(t *testing.T) {
	bin := web.FindBrowser()
	if bin == "" {
		t.Skip("SKIP: no chromium on PATH; .ci/run installs Debian's chromium")
	}
	n := testnode.Start(t)
	ctx := context.Background()
	const replyBody = "Yes: same request_id, same content.\n\n```go\nfmt.Println(\"retry\")\n```\n\nSee [the guide](https://rest.example/guide) and [this](javascript:alert(1))."
	ask := testkit.Question("タイムアウトした投稿は再送してよい? <script>alert(1)</script>")
	ask.Body = "Is a retry safe?"
	q := testnode.Post(t, n, ask).Entry
	r := testnode.Post(t, n, testkit.Reply(q.ID, replyBody)).Entry
	h := testnode.Post(t, n, testkit.Reply(q.ID, "HIDDEN REPLY BODY")).Entry
	if _, err := n.HideEntry(ctx, h.ID); err != nil {
		t.Fatal(err)
	}
	url := n.URL() + "/threads/" + q.ID
	if resp, err := http.Get(url); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %v %v", url, resp, err)
	}

	dir := t.TempDir()
	bctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // against a hung browser; generous for busy cores
	defer cancel()
	dom := web.RunBrowser(bctx, t, bin, dir, "--dump-dom", url)
	web.CheckText(t, dom,
		[]string{html.EscapeString("タイムアウトした投稿は再送してよい? <script>alert(1)</script>"), "Yes: same request_id, same content.", `id="reply-` + r.ID + `"`,
			// The body is rendered Markdown: the fence is code, the link
			// carries its rel, the javascript: link is text.
			`<pre><code class="language-go">fmt.Println("retry")`, `<a href="https://rest.example/guide" rel="nofollow ugc noopener">the guide</a>`, "and this."},
		[]string{"HIDDEN REPLY BODY", "<script>alert(1)</script>", "```", "javascript:"})
	shot := filepath.Join(dir, "node-thread.png")
	web.RunBrowser(bctx, t, bin, dir, "--screenshot="+shot, "--window-size=1200,1400", url)
	b, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("screenshot: %v", err)
	}
	t.Logf("screenshot of a running node's thread page: %s (%d bytes)", shot, len(b))
}
