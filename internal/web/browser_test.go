package web

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// browserNames are the commands a headless Chromium answers to, in the
// order they are looked for on PATH.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

func findBrowser() string {
	for _, n := range browserNames {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// runBrowser runs headless Chromium once with args and returns its
// standard output. Each run gets its own profile directory, so runs never
// share a profile lock or write to the home directory.
func runBrowser(ctx context.Context, t *testing.T, bin, dir string, args ...string) string {
	t.Helper()
	profile, err := os.MkdirTemp(dir, "profile-")
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + profile,
	}, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s", bin, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// TestBrowserThreadPage loads a thread page in headless Chromium and checks
// that the rendered DOM shows the question's title and a reply, then takes
// screenshots at a desktop and a phone width. By default it reads a test
// server over the fake service; RESTAREA_BROWSER_URL points it at a thread
// page of a running node instead (then it checks the page's structure,
// since the titles are not known). RESTAREA_SCREENSHOT_DIR keeps the
// screenshots there instead of in the test's temporary directory.
func TestBrowserThreadPage(t *testing.T) {
	bin := findBrowser()
	if bin == "" {
		t.Skip("SKIP: no chromium on PATH; .ci/run installs Debian's chromium")
	}
	url := os.Getenv("RESTAREA_BROWSER_URL")
	want := []string{`id="q-title"`, `class="entry reply"`, `id="reply-`}
	if url == "" {
		srv := serve(t, newBoard())
		url = srv.URL + "/threads/" + qPlain
		want = append(want, "How do retries work?", "First reply body", `id="reply-`+rFirst+`"`,
			"<pre><code>x := 1", "<h5>How to reply</h5>")
	}
	dir := t.TempDir()
	shots := dir
	if d := os.Getenv("RESTAREA_SCREENSHOT_DIR"); d != "" {
		shots = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // against a hung browser; generous for busy cores
	defer cancel()

	dom := runBrowser(ctx, t, bin, dir, "--dump-dom", url)
	checkText(t, dom, want, []string{"HIDDEN REPLY BODY"})

	for _, shot := range []struct{ name, size string }{
		{"thread.png", "1200,1600"},
		{"thread-narrow.png", "400,1600"},
	} {
		path := filepath.Join(shots, shot.name)
		runBrowser(ctx, t, bin, dir, "--screenshot="+path, "--window-size="+shot.size, url)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("screenshot not written: %v", err)
		}
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("%s is not a PNG (%d bytes)", path, len(b))
		}
		t.Logf("screenshot %s (%d bytes)", path, len(b))
	}
}
