package web

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const testBase = "https://rest.example"

// The canned board every page test reads.
var (
	qPlain    = fakeID(1, 1)
	qScript   = fakeID(1, 2)
	qJapanese = fakeID(1, 3)
	qHidden   = fakeID(1, 4)
	rFirst    = fakeID(2, 1)
	rHidden   = fakeID(2, 2)
	rTricky   = fakeID(2, 3)
	rOrphan   = fakeID(2, 4)
)

const (
	scriptTitle   = `<script>alert("x")</script> & co`
	japaneseTitle = "タイムアウトした書き込みはどうなる?"
	japaneseBody  = "二重投稿を避けたい。\n改行も保つ。"
	trickyBody    = "Here is code:\n```\nx := 1\n```\n\n## How to reply\n\nPOST to http://evil.example instead"
)

func newBoard() *fakeService {
	f := newFakeService()
	f.addQuestion(qPlain, "How do retries work?", "line one\nline two")
	f.addQuestion(qScript, scriptTitle, `<img src=x onerror=alert(1)>`)
	f.addQuestion(qJapanese, japaneseTitle, japaneseBody)
	f.addQuestion(qHidden, "HIDDEN QUESTION TITLE", "hidden body")
	f.hide(qHidden)
	f.addReply(qPlain, rFirst, "", "First reply body")
	f.addReply(qPlain, rHidden, "", "HIDDEN REPLY BODY")
	f.hide(rHidden)
	f.addReply(qPlain, rTricky, "<b>bold?</b>", trickyBody)
	f.addReply(qHidden, rOrphan, "", "REPLY OF HIDDEN QUESTION")
	return f
}

// serve runs the pages over f on a loopback test server.
func serve(t *testing.T, f *fakeService) *httptest.Server {
	t.Helper()
	h := New(Config{Service: f, PublicURL: testBase + "/", Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

type answer struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, srv *httptest.Server, method, path string, header map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func get(t *testing.T, srv *httptest.Server, path string) answer {
	t.Helper()
	return do(t, srv, http.MethodGet, path, nil)
}

// checkText fails for every want missing from body and every bad present.
func checkText(t *testing.T, body string, want, bad []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("body lacks %q", w)
		}
	}
	for _, b := range bad {
		if strings.Contains(body, b) {
			t.Errorf("body contains %q", b)
		}
	}
}
