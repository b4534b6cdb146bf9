package console_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// testToken is the admin token of the test cluster.
const testToken = "console-test-admin-token-0123456789"

// findChromium returns a Chromium to drive, or "".
func findChromium() string {
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// browser is one headless Chromium tab and where its screenshots go.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

// browserStep bounds one browser action and browserSession the whole
// test: bounds against a browser that hangs, generous enough for a
// machine whose cores are busy (Chromium under load takes seconds to lay
// out a page).
const (
	browserStep    = 90 * time.Second
	browserSession = 10 * time.Minute
)

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		loc, _ := chromedp.Run(b.ctx, chromedp.Location())
		b.t.Fatalf("browser at %s: %v", loc, err)
	}
}

func run[T any](b *browser, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("browser: %v", err)
	}
	return v
}

// shot saves a full-page PNG screenshot of the current page.
func (b *browser) shot(name string) {
	b.t.Helper()
	png := run(b, chromedp.FullScreenshot(100))
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		b.t.Fatalf("screenshot %s is not a PNG", name)
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s (%d bytes)", path, len(png))
}

// click clicks the element of sel, waits for the page it leads to and
// returns that page's HTTP status.
func (b *browser) click(sel string) int64 {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("click %s: %v", sel, err)
	}
	return resp.Status
}

// follow clicks the element of sel, expects a 200 page and waits until
// the element of want is visible on it.
func (b *browser) follow(sel, want string) {
	b.t.Helper()
	if st := b.click(sel); st != http.StatusOK {
		b.t.Fatalf("click %s: status %d", sel, st)
	}
	b.do(chromedp.WaitVisible(chromedp.CSS(want)))
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return run(b, chromedp.Text(chromedp.CSS(sel)))
}

// postJSON posts req to the public API and returns the status and error code.
func postJSON(t *testing.T, base string, req restarea.PostRequest) (int, string) {
	t.Helper()
	r, _, code := testkit.PostEntry(t, base, req)
	return r.Status, string(code)
}

// leaderID is the leader n knows of.
func leaderID(t *testing.T, n *node.Node) string {
	t.Helper()
	st, err := n.ClusterStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.LeaderID
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func postForm(t *testing.T, u string, form url.Values, cookie *http.Cookie, origin string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cookie != nil {
		req.AddCookie(cookie)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestConsoleInChromium drives the console in headless Chromium against a
// real 3-node cluster: sign-in (a wrong token refused, then the right
// one), hiding and unhiding a reply as seen on the public thread, deleting
// a question (its replay then gets 410), turning writes off (a public post
// is refused), the cluster page read on another node with the same
// session, a leadership transfer, removing a member; and, with plain HTTP, a POST without the
// CSRF token refused 403. Screenshots of every page go to
// RESTAREA_SCREENSHOTS, or to the test's temporary directory.
func TestConsoleInChromium(t *testing.T) {
	bin := findChromium()
	if bin == "" {
		t.Skip("SKIP: no Chromium found (/usr/bin/chromium, or chromium, chromium-browser, google-chrome on PATH)")
	}
	logs := &testkit.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	nodes := testnode.StartCluster(t, 3, testnode.WithAdminToken(testToken),
		testnode.WithConfig(func(c *server.Config) { c.Logger = logger }))
	leader := testnode.Leader(t, nodes)
	var here, other *node.Node // browsed first; browsed second, with the same cookie
	for _, n := range nodes {
		switch {
		case n == leader:
		case here == nil:
			here = n
		default:
			other = n
		}
	}
	base := here.URL()
	// Operator actions are audited once the cluster writes log format 3,
	// which a fresh cluster's leader switches to within moments.
	testnode.WaitLogFormat(t, leader, 3)

	// The board: a question with a reply, posted over the public API.
	question := testkit.Question("Is a retried post safe?")
	question.Body = "My post timed out. May I send it again?"
	if st, code := postJSON(t, base, question); st != http.StatusCreated {
		t.Fatalf("post question: %d %s", st, code)
	}
	page, err := here.ListEntries(context.Background(), restarea.ListOptions{})
	if err != nil || len(page.Entries) == 0 {
		t.Fatalf("list entries: %v", err)
	}
	q := page.Entries[0]
	reply := testkit.Reply(q.ID, "Yes: same request_id, same content. REPLY-MARKER")
	reply.Actor.Name = "helper-agent" // the actor filter below finds it by this name
	if st, code := postJSON(t, base, reply); st != http.StatusCreated {
		t.Fatalf("post reply: %d %s", st, code)
	}
	page, _ = here.ListEntries(context.Background(), restarea.ListOptions{})
	r := page.Entries[0]

	shots := os.Getenv("RESTAREA_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	bctx, bcancel := context.WithTimeout(context.Background(), browserSession)
	defer bcancel()
	actx, acancel := chromedp.NewExecAllocator(bctx,
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("hide-scrollbars", true))
	defer acancel()
	cctx, ccancel := chromedp.NewContext(actx)
	defer ccancel()
	b := &browser{t: t, ctx: cctx, shots: shots}
	// The public pages are cached for 10 s; the test must see each change.
	if _, err := chromedp.Run(cctx, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Call(ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true})
		return chromedp.Void{}, err
	}); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	cookies := func() map[string]*network.Cookie {
		res, err := chromedp.Call(cctx, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/admin/"}})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*network.Cookie{}
		for _, c := range res.Cookies {
			out[c.Name] = c
		}
		return out
	}

	// Signing in: /admin sends a stranger to the form; a wrong token is
	// refused and leaves no session.
	b.do(chromedp.Navigate(base+"/admin"), chromedp.WaitVisible(chromedp.CSS("#token")))
	b.shot("01-login")
	b.do(chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token-0123456789abcdef"))
	if st := b.click("form.stack button"); st != http.StatusUnauthorized {
		t.Fatalf("wrong token: status %d, want 401", st)
	}
	b.do(chromedp.WaitVisible(chromedp.CSS("p.problem")))
	if got := b.text("p.problem"); !strings.Contains(got, "not the admin token") {
		t.Fatalf("wrong token: %q", got)
	}
	if _, ok := cookies()["restarea_admin"]; ok {
		t.Fatal("a wrong token got a session cookie")
	}
	b.shot("02-login-refused")
	b.do(chromedp.SendKeys(chromedp.CSS("#token"), testToken))
	if st := b.click("form.stack button"); st != http.StatusOK {
		t.Fatalf("sign-in: status %d", st)
	}
	b.do(chromedp.WaitVisible(chromedp.CSS("table.grid")))
	if loc := run(b, chromedp.Location()); !strings.HasSuffix(loc, "/admin/entries") || strings.Contains(loc, testToken) {
		t.Fatalf("after sign-in at %s", loc)
	}
	sc := cookies()["restarea_admin"]
	if sc == nil || !sc.HTTPOnly || sc.SameSite != network.CookieSameSiteStrict || sc.Path != "/admin" {
		t.Fatalf("session cookie %+v", sc)
	}
	if got := b.text("table.grid"); !strings.Contains(got, "Is a retried post safe?") || !strings.Contains(got, "REPLY-MARKER") {
		t.Fatalf("entries page: %q", got)
	}
	b.shot("03-entries")

	// Hiding the reply: it vanishes from the public thread; unhiding
	// brings it back.
	b.do(chromedp.Navigate(base+"/admin/entries/"+r.ID), chromedp.WaitVisible(chromedp.CSS("table.facts")))
	facts := b.text("table.facts")
	for _, want := range []string{reply.RequestID, "http", "visible"} {
		if !strings.Contains(facts, want) {
			t.Fatalf("entry page lacks %q: %q", want, facts)
		}
	}
	b.shot("04-entry")
	b.follow(`a[href$="/hide"]`, "section.confirm")
	b.shot("05-confirm-hide")
	b.follow("section.confirm button", "p.notice")
	b.shot("06-entry-hidden")
	thread := func() string {
		b.do(chromedp.Navigate(base+"/threads/"+q.ID), chromedp.WaitVisible(chromedp.CSS("#q-title")))
		return run(b, chromedp.OuterHTML(chromedp.CSS("main")))
	}
	if strings.Contains(thread(), "REPLY-MARKER") {
		t.Fatal("the hidden reply is still on the public thread")
	}
	b.shot("07-public-thread-without-reply")
	b.do(chromedp.Navigate(base+"/admin/entries/"+r.ID), chromedp.WaitVisible(chromedp.CSS(`a[href$="/unhide"]`)))
	b.follow(`a[href$="/unhide"]`, "section.confirm")
	b.follow("section.confirm button", "p.notice")
	if !strings.Contains(thread(), "REPLY-MARKER") {
		t.Fatal("the unhidden reply is not back on the public thread")
	}

	// Filtering: hidden entries only (none now), then by actor.
	b.do(chromedp.Navigate(base+"/admin/entries?actor=helper"), chromedp.WaitVisible(chromedp.CSS("table.grid")))
	if got := b.text("table.grid"); !strings.Contains(got, "REPLY-MARKER") || strings.Contains(got, "Is a retried post safe?") {
		t.Fatalf("actor filter: %q", got)
	}
	b.shot("08-entries-filtered")

	// Deleting the question: a replay of it is answered 410.
	b.do(chromedp.Navigate(base+"/admin/entries/"+q.ID), chromedp.WaitVisible(chromedp.CSS(`a[href$="/delete"]`)))
	b.follow(`a[href$="/delete"]`, "section.confirm.danger")
	b.shot("09-confirm-delete")
	b.follow("section.confirm button", "p.notice")
	b.shot("10-entries-after-delete")
	if st, code := postJSON(t, base, question); st != http.StatusGone || code != string(restarea.CodeDeleted) {
		t.Fatalf("replay of the deleted question: %d %s, want 410 deleted", st, code)
	}

	// Turning writes off: a public post is refused.
	b.do(chromedp.Navigate(base+"/admin/settings"), chromedp.WaitVisible(chromedp.CSS("form.limits")))
	b.shot("11-settings")
	b.follow(`section[aria-labelledby="writes-h"] button`, "p.notice")
	b.shot("12-settings-writes-off")
	fresh := question
	fresh.RequestID, fresh.Title = uuid.NewString(), "A post while writes are off"
	if st, code := postJSON(t, base, fresh); st != http.StatusServiceUnavailable || code != string(restarea.CodeWritesDisabled) {
		t.Fatalf("public post with writes off: %d %s, want 503 writes_disabled", st, code)
	}

	// A POST with the session cookie but no CSRF token (or a wrong one,
	// or from another site) is refused 403 and changes nothing; the same
	// POST with the token goes through.
	csrf := run(b, chromedp.Value(chromedp.CSS(`input[name="csrf"]`)))
	cookie := &http.Cookie{Name: sc.Name, Value: sc.Value}
	on := url.Values{"writes_disabled": {"false"}}
	for name, c := range map[string]struct {
		form   url.Values
		origin string
	}{
		"no csrf":    {on, ""},
		"wrong csrf": {url.Values{"writes_disabled": {"false"}, "csrf": {"x" + csrf[1:]}}, ""},
		"cross-site": {url.Values{"writes_disabled": {"false"}, "csrf": {csrf}}, "https://evil.example"},
	} {
		if resp := postForm(t, base+"/admin/settings", c.form, cookie, c.origin); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s: %d, want 403", name, resp.StatusCode)
		}
	}
	if st, _ := here.Settings(context.Background()); !st.WritesDisabled {
		t.Fatal("a refused POST changed the settings")
	}
	if resp := postForm(t, base+"/admin/settings", url.Values{"writes_disabled": {"false"}, "csrf": {csrf}}, cookie, ""); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST with the CSRF token: %d, want 303", resp.StatusCode)
	}
	if st, code := postJSON(t, base, fresh); st != http.StatusCreated {
		t.Fatalf("public post with writes back on: %d %s", st, code)
	}

	// The backup: a download for the session only, never cached.
	req, _ := http.NewRequest(http.MethodGet, other.URL()+"/admin/backup", nil)
	req.AddCookie(cookie)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	backup, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(backup) < 4096 || resp.Header.Get("Cache-Control") != "no-store" ||
		!strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment;") {
		t.Fatalf("backup: %d, %d bytes, headers %v", resp.StatusCode, len(backup), resp.Header)
	}
	if resp, err := noRedirect.Get(base + "/admin/backup"); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("backup without a session: %v %v", resp, err)
	}

	// The cluster page, read on another node with the same cookie: the
	// session is stateless, so every node with the token accepts it.
	b.do(chromedp.Navigate(other.URL()+"/admin/cluster"), chromedp.WaitVisible(chromedp.CSS("table.grid")))
	members := b.text("table.grid")
	for _, n := range nodes {
		if !strings.Contains(members, n.ID()) {
			t.Fatalf("cluster page lacks member %s: %q", n.ID(), members)
		}
	}
	if !strings.Contains(members, "leader") {
		t.Fatalf("cluster page names no leader: %q", members)
	}
	b.shot("13-cluster")
	// The same page on a phone: the table's rows stack.
	b.do(chromedp.EmulateViewport(400, 900))
	b.shot("13-cluster-narrow")
	b.do(chromedp.EmulateViewport(1200, 900))
	// Handing leadership over, to whichever voter is most up to date.
	before := leaderID(t, other)
	b.follow(`form[action="/admin/cluster/transfer"] button`, "p.notice")
	notice := b.text("p.notice")
	testkit.Eventually(t, time.Minute, "leadership to move", func() error {
		if id := leaderID(t, other); id == before || id == "" {
			return fmt.Errorf("leader %q (was %s; the console said %q)", id, before, notice)
		}
		return nil
	})
	b.shot("13-cluster-after-transfer")
	// Removing a member, behind its confirmation: the one browsed first.
	b.follow(`a[href="/admin/cluster/remove?id=`+here.ID()+`"]`, "section.confirm.danger")
	b.shot("14-confirm-remove")
	b.follow("section.confirm button", "p.notice")
	if st, err := other.ClusterStatus(context.Background()); err != nil || len(st.Members) != 2 {
		t.Fatalf("after removing %s: %+v %v", here.ID(), st.Members, err)
	}
	b.shot("15-cluster-after-remove")

	// The audit trail lists every action taken above, on the node browsed
	// second as on any other, with the browser's address.
	b.do(chromedp.Navigate(other.URL()+"/admin/audit"), chromedp.WaitVisible(chromedp.CSS("table.audit")))
	trail := b.text("table.audit")
	for _, want := range []string{"hide", "unhide", "delete", "settings", "leadership_transfer", "member_remove", "writes_disabled", "127.0.0.1", r.ID[:13], here.ID()} {
		if !strings.Contains(trail, want) {
			t.Fatalf("the audit page lacks %q: %q", want, trail)
		}
	}
	b.shot("16-audit")

	// Signing out drops the cookie.
	b.follow("form.logout button", "#token")
	if _, ok := cookies()["restarea_admin"]; ok {
		t.Fatal("the session cookie survived signing out")
	}
	if strings.Contains(logs.String(), testToken) {
		t.Fatal("the admin token appears in the nodes' logs")
	}
}
