package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

// stalledWriter is a client that never reads: its first Write blocks
// until released, as a connection's does once the socket buffers are full.
type stalledWriter struct {
	header  http.Header
	once    sync.Once
	blocked chan struct{}
	release chan struct{}
}

func (w *stalledWriter) Header() http.Header { return w.header }
func (w *stalledWriter) WriteHeader(int)     {}
func (w *stalledWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.blocked) })
	<-w.release
	return len(p), nil
}

// storedService answers reads with entries of their own, as a node does
// (it decodes them from its store): what a view holds of them counts.
type storedService struct{ *testkit.FakeService }

func (s storedService) ListReplies(ctx context.Context, id string, opts restarea.ListOptions) (restarea.ReplyPage, error) {
	p, err := s.FakeService.ListReplies(ctx, id, opts)
	for i := range p.Replies {
		p.Replies[i].Body = strings.Clone(p.Replies[i].Body)
	}
	return p, err
}

// BenchmarkThreadViewHeld is the finding of issue 26: a thread of 500
// replies of 20,000 emoji each, read by a client that never reads the
// answer. It reports the heap a GET holds while its client stalls
// (held-B/GET: live heap at the first blocked write, over the heap before
// the request, after a collection each time) besides what it allocates
// (B/op).
func BenchmarkThreadViewHeld(b *testing.B) {
	f := testkit.NewFakeService()
	q := fakeID(9, 0)
	addQuestion(f, q, "The finding's thread", "body")
	body := strings.Repeat("😀", 20000)
	for i := range 500 {
		addReply(f, q, fakeID(9, i+1), "", body+" "+fakeID(0, i))
	}
	h := New(Config{Service: storedService{f}, PublicURL: testBase})
	for _, path := range []string{"/threads/" + q, "/threads/" + q + ".md"} {
		name := "page"
		if strings.HasSuffix(path, ".md") {
			name = "md"
		}
		// The time of a view, its bodies cached, read at once.
		b.Run(name+"/read", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := &stalledWriter{header: http.Header{}, blocked: make(chan struct{}), release: make(chan struct{})}
				close(w.release)
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
			}
		})
		b.Run(name+"/stalled", func(b *testing.B) {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil)) // bodies rendered and cached
			b.ReportAllocs()
			measureHeld(b, h, path)
		})
	}
}

// measureHeld reports the heap a GET of path holds while its client does
// not read (stalledWriter blocks the first write), on average and at most.
func measureHeld(b *testing.B, h http.Handler, path string) {
	var held, most uint64
	var ms runtime.MemStats
	n := 0
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		w := &stalledWriter{header: http.Header{}, blocked: make(chan struct{}), release: make(chan struct{})}
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		}()
		<-w.blocked
		runtime.GC()
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > base {
			held += ms.HeapAlloc - base
			most = max(most, ms.HeapAlloc-base)
		}
		close(w.release)
		<-done
		n++
	}
	b.ReportMetric(float64(held)/float64(n), "held-B/GET")
	b.ReportMetric(float64(most), "max-held-B")
}
