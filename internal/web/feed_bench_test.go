package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

// storedBoard is storedService for every list a feed reads: threads too
// come back as entries of their own, as a node decodes them.
type storedBoard struct{ storedService }

func (s storedBoard) ListThreads(ctx context.Context, opts restarea.ListOptions) (restarea.ThreadPage, error) {
	p, err := s.FakeService.ListThreads(ctx, opts)
	for i := range p.Threads {
		p.Threads[i].Body = strings.Clone(p.Threads[i].Body)
	}
	return p, err
}

// hostileBoard is a board whose feeds are the largest a client can ask
// for: a thread of replies bodies and a list of questions bodies, n of
// each, all of body (with a distinct suffix when distinct is true, so
// each is rendered, not found in bodyCache), and returns the thread's id.
func hostileBoard(f *testkit.FakeService, n int, body string, distinct bool) string {
	q := fakeID(7, 0)
	f.Add(restarea.Entry{ID: q, Type: restarea.TypeQuestion, Title: "hostile", Body: "q", Actor: restarea.Actor{Name: "asker"},
		CreatedAt: fakeEpoch, Visible: true})
	for i := range n {
		b := body
		if distinct {
			b += " " + fakeID(0, i)
		}
		f.Add(restarea.Entry{ID: fakeID(8, i), Type: restarea.TypeReply, ParentID: q, Body: b,
			Actor: restarea.Actor{Name: "replier"}, CreatedAt: fakeEpoch.Add(time.Duration(i) * time.Second), Visible: true})
		f.Add(restarea.Entry{ID: fakeID(6, i), Type: restarea.TypeQuestion, Title: "hostile question", Body: b,
			Actor: restarea.Actor{Name: "asker"}, CreatedAt: fakeEpoch.Add(time.Duration(i) * time.Second), Visible: true})
	}
	return q
}

// sizeWriter is a client that reads at once, counting what it gets.
type sizeWriter struct {
	header http.Header
	status int
	n      int
}

func (w *sizeWriter) Header() http.Header         { return w.header }
func (w *sizeWriter) WriteHeader(s int)           { w.status = s }
func (w *sizeWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// feedSize answers path on h and returns the status and the size of the
// answer.
func feedSize(h http.Handler, path string) (int, int) {
	w := &sizeWriter{header: http.Header{}, status: 200}
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w.status, w.n
}

// BenchmarkFeedHeld measures a feed GET on the largest feeds a client can
// ask for: a thread of 2,000 replies of 20,000 emoji (the thread view
// finding of issue 26, read through its feed), and threads and the site
// feed whose every entry is a hostile body of 20,000 characters: '>'
// (nested quotes, the largest Markdown expansion: 27 times as HTML, 47 as
// Atom) or '<' (8 times as Atom). It reports what a GET allocates (B/op),
// the answer's size (doc-B) and the heap a GET holds while its client
// never reads (held-B/GET and max-held-B, as BenchmarkThreadViewHeld).
func BenchmarkFeedHeld(b *testing.B) {
	cases := []struct {
		name     string
		n        int
		body     string
		distinct bool
	}{
		{"long", 2000, strings.Repeat("😀", restarea.MaxBody), true},
		{"quotes", 60, strings.Repeat(">", restarea.MaxBody), false},
		{"lt", 60, strings.Repeat("<", restarea.MaxBody), false},
	}
	for _, c := range cases {
		f := testkit.NewFakeService()
		q := hostileBoard(f, c.n, c.body, c.distinct)
		h := New(Config{Service: storedBoard{storedService{f}}, PublicURL: testBase})
		for _, feed := range []struct{ name, path string }{{"thread", "/threads/" + q + "/feed.atom"}, {"site", "/feed.atom"}} {
			if c.name == "long" && feed.name == "site" {
				continue // the same entries as the thread's, listed newest first already
			}
			path := feed.path
			b.Run(feed.name+"-"+c.name+"/read", func(b *testing.B) {
				_, size := feedSize(h, path) // bodies rendered and cached
				b.ReportAllocs()
				for b.Loop() {
					feedSize(h, path)
				}
				b.ReportMetric(float64(size), "doc-B")
			})
			b.Run(feed.name+"-"+c.name+"/stalled", func(b *testing.B) {
				feedSize(h, path)
				measureHeld(b, h, path)
			})
		}
	}
}
