package web

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

// bigBody is the largest body of the finding: 20,000 emoji, 80,000 bytes.
var bigBody = strings.Repeat("😀", restarea.MaxBody)

var (
	replyIDOnPage = regexp.MustCompile(`<article class="entry reply" id="reply-([0-9a-f-]+)"`)
	replyIDInMD   = regexp.MustCompile("\n- Reply id: `([0-9a-f-]+)`")
	nextOnPage    = regexp.MustCompile(`<a rel="next" href="([^"]+)"`)
	nextInMD      = regexp.MustCompile(`\n- More replies follow this part: <` + regexp.QuoteMeta(testBase) + `([^>]+)>`)
	numberInMD    = regexp.MustCompile(`\n### Reply (\d+)`)
)

// partThread stores a question with n replies of body (each made unique)
// and returns the question's id and the replies' ids in order.
func partThread(f *testkit.FakeService, n int, body string) (string, []string) {
	return mixedThread(f, n, func(int) string { return body })
}

// mixedThread is partThread with the body of reply i from body(i).
func mixedThread(f *testkit.FakeService, n int, body func(i int) string) (string, []string) {
	q := fakeID(4, n)
	addQuestion(f, q, "Busy thread", "body")
	ids := make([]string, n)
	for i := range n {
		ids[i] = fakeID(5, i)
		addReply(f, q, ids[i], "", fmt.Sprintf("%s %02d", body(i), i))
	}
	return q, ids
}

// followParts reads every part of a thread from first, following each
// part's link to the next, and returns the reply ids of each part.
func followParts(t *testing.T, srv *httptest.Server, first string, ids, next *regexp.Regexp) [][]string {
	t.Helper()
	var parts [][]string
	for path := first; path != ""; {
		if len(parts) > 50 {
			t.Fatal("the parts do not end")
		}
		a := get(t, srv, path)
		if a.status != 200 {
			t.Fatalf("%s: status %d:\n%s", path, a.status, a.body)
		}
		if got := a.header.Get("Content-Length"); got != strconv.Itoa(len(a.body)) {
			t.Errorf("%s: Content-Length %s for %d bytes", path, got, len(a.body))
		}
		var part []string
		for _, m := range ids.FindAllStringSubmatch(a.body, -1) {
			part = append(part, m[1])
		}
		parts = append(parts, part)
		path = ""
		if m := next.FindStringSubmatch(a.body); m != nil {
			path = html.UnescapeString(m[1])
		}
	}
	return parts
}

// TestThreadParts: a thread page and its .md hold at most partReplies
// replies and partBytes of reply text, link to the next part, and
// following the links yields every reply exactly once, in order.
func TestThreadParts(t *testing.T) {
	bigSize := len(bigBody) + len(" 00") + len("replier")
	perBig := partBytes / bigSize
	same := func(body string) func(int) string { return func(int) string { return body } }
	// perBig large replies, then 4 KiB ones: the part ends inside the
	// service's page of small replies, so it asks again for those that fit.
	medium := strings.Repeat("m", 4<<10)
	fill := (partBytes - perBig*bigSize) / (len(medium) + len(" 00") + len("replier"))
	tests := []struct {
		name    string
		replies int
		body    func(int) string
		parts   []int
	}{
		{"small thread is one part", 450, same("reply body"), []int{450}},
		{"exactly the count bound", partReplies, same("reply body"), []int{partReplies}},
		{"over the count bound", 2*partReplies + 34, same("reply body"), []int{partReplies, partReplies, 34}},
		{"over the byte bound", 2*perBig + 8, same(bigBody), []int{perBig, perBig, 8}},
		{"byte bound inside a page", perBig + 20, func(i int) string {
			if i < perBig {
				return bigBody
			}
			return medium
		}, []int{perBig + fill, 20 - fill}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := testkit.NewFakeService()
			f.SetPageSize(37) // smaller than asked for, as a service may answer
			q, want := mixedThread(f, tc.replies, tc.body)
			srv := serve(t, f)
			for _, form := range []struct {
				name, first string
				ids, next   *regexp.Regexp
			}{
				{"page", "/threads/" + q, replyIDOnPage, nextOnPage},
				{"markdown", "/threads/" + q + ".md", replyIDInMD, nextInMD},
			} {
				parts := followParts(t, srv, form.first, form.ids, form.next)
				var got []string
				var sizes []int
				for _, p := range parts {
					sizes = append(sizes, len(p))
					got = append(got, p...)
				}
				if fmt.Sprint(sizes) != fmt.Sprint(tc.parts) {
					t.Errorf("%s: parts of %v replies, want %v", form.name, sizes, tc.parts)
				}
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("%s: %d replies over the parts, want each of %d once, in order", form.name, len(got), len(want))
				}
			}
		})
	}
}

// TestThreadPartText: a thread in one part says nothing of parts; one in
// several says so at the top of its .md, numbers the replies on across
// parts, and ends each part but the last with the next part's address.
func TestThreadPartText(t *testing.T) {
	f := testkit.NewFakeService()
	q, _ := partThread(f, partReplies+3, "reply body")
	small, _ := partThread(f, 3, "short")
	srv := serve(t, f)

	one := get(t, srv, "/threads/"+small+".md")
	checkText(t, one.body, []string{"## Replies (3)", "### Reply 3\n"}, []string{"part", "More replies"})
	page := get(t, srv, "/threads/"+small)
	checkText(t, page.body, []string{"3 replies"}, []string{"in parts", `rel="next"`})

	first := get(t, srv, "/threads/"+q+".md")
	next := fmt.Sprintf("/threads/%s.md?cursor=%d&from=%d", q, partReplies, partReplies+1)
	checkText(t, first.body, []string{
		"- This file is one part of the thread: replies 1 to 500. A thread is one file up to 500 replies and 2 MiB of reply text",
		"- More replies follow this part: <" + testBase + next + ">",
		"## Replies: replies 1 to 500",
		"### Reply 500\n",
		"## More replies\n\nThis part ends here; the thread goes on. Next part: <" + testBase + next + ">",
		fmt.Sprintf("replies?cursor=%d`", partReplies),
	}, []string{"### Reply 501"})
	if strings.Index(first.body, "## More replies") > strings.Index(first.body, "## How to reply") {
		t.Error("the next part's address is not before the closing section")
	}
	second := get(t, srv, next)
	checkText(t, second.body, []string{"## Replies: replies 501 to 503", "### Reply 501\n", "### Reply 503\n", "## How to reply"},
		[]string{"More replies follow", "### Reply 1\n"})
	if got := len(numberInMD.FindAllString(second.body, -1)); got != 3 {
		t.Errorf("second part lists %d replies, want 3", got)
	}

	pg := get(t, srv, "/threads/"+q)
	checkText(t, pg.body, []string{"Replies 1–500", "this thread is longer, so it is in parts",
		`<a rel="next" href="/threads/` + q + fmt.Sprintf(`?cursor=%d&amp;from=%d">Next part: replies from 501</a>`, partReplies, partReplies+1),
		`<link rel="canonical"`}, []string{"The first replies"})
	pg2 := get(t, srv, fmt.Sprintf("/threads/%s?cursor=%d&from=%d", q, partReplies, partReplies+1))
	checkText(t, pg2.body, []string{"Replies 501–503", `<a href="/threads/` + q + `">The first replies</a>`, ">Reply 503<",
		`href="/threads/` + q + fmt.Sprintf(`.md?cursor=%d&amp;from=%d"`, partReplies, partReplies+1)},
		[]string{`rel="next"`, `<link rel="canonical"`})

	// An API cursor pasted by hand: the replies, without numbers.
	byHand := get(t, srv, fmt.Sprintf("/threads/%s.md?cursor=%d", q, partReplies+1))
	checkText(t, byHand.body, []string{"2 replies after an earlier part", "\n### Reply\n"}, []string{"### Reply 50"})
}

func TestThreadPartAddress(t *testing.T) {
	f := testkit.NewFakeService()
	q, _ := partThread(f, 3, "reply body")
	srv := serve(t, f)
	for _, tc := range []struct {
		query  string
		status int
	}{
		{"?cursor=1&from=2", 200},
		{"?cursor=1", 200},
		{"?from=7", 200}, // no cursor: the first part, numbered from 1
		{"?cursor=1&from=0", 400},
		{"?cursor=1&from=x", 400},
		{"?cursor=1&from=" + strconv.Itoa(maxFrom+1), 400},
		{"?cursor=" + strings.Repeat("a", maxCursorSize+1), 400},
		{"?cursor=nope", 400},
	} {
		for _, suffix := range []string{"", ".md"} {
			if a := get(t, srv, "/threads/"+q+suffix+tc.query); a.status != tc.status {
				t.Errorf("%s%s: status %d, want %d", suffix, tc.query, a.status, tc.status)
			}
		}
	}
}

// recordingWriter is a ResponseWriter that counts the writes it gets.
type recordingWriter struct {
	header        http.Header
	status        int
	writes, total int
	largest       int
}

func (w *recordingWriter) Header() http.Header { return w.header }
func (w *recordingWriter) WriteHeader(s int)   { w.status = s }
func (w *recordingWriter) Write(p []byte) (int, error) {
	w.writes++
	w.total += len(p)
	w.largest = max(w.largest, len(p))
	return len(p), nil
}

// TestThreadPartStreams: a part is written to the connection as it is
// produced, in pieces no larger than one body's HTML or the stream's
// buffer, and its Content-Length is what was written.
func TestThreadPartStreams(t *testing.T) {
	f := testkit.NewFakeService()
	q, _ := partThread(f, 30, bigBody)
	h := New(Config{Service: f, PublicURL: testBase})
	for _, path := range []string{"/threads/" + q, "/threads/" + q + ".md"} {
		w := &recordingWriter{header: http.Header{}}
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.status != 200 {
			t.Fatalf("%s: status %d", path, w.status)
		}
		if w.header.Get("Content-Length") != strconv.Itoa(w.total) {
			t.Errorf("%s: Content-Length %s, wrote %d", path, w.header.Get("Content-Length"), w.total)
		}
		// A body of 80,000 bytes may go through in one write (bufio hands
		// a write larger than its buffer straight on); the page of about
		// 2 MiB may not.
		if limit := len(bigBody) + 2*streamBuffer; w.largest > limit || w.writes < w.total/limit {
			t.Errorf("%s: %d bytes in %d writes, the largest %d: not streamed", path, w.total, w.writes, w.largest)
		}
	}
}
