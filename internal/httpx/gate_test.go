package httpx

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/testkit"
)

// held serves requests that wait until release is closed, counting the
// ones that got in.
type held struct {
	release chan struct{}
	mu      sync.Mutex
	in      int
}

func (h *held) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.in++
	h.mu.Unlock()
	<-h.release
}

func (h *held) entered() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.in
}

func request(remote string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/threads/x", nil)
	r.RemoteAddr = remote
	return r
}

// One source gets its share and then 429 at once; another source still
// gets in; past the node's total a request waits, then gets 503; a slot
// freed goes to the next request.
func TestGateBoundsSourcesAndNode(t *testing.T) {
	h := &held{release: make(chan struct{})}
	g := NewGate(GateConfig{Total: 3, PerSource: 2, Wait: 50 * time.Millisecond})
	srv := g.Wrap(h, Expensive, nil)
	var wg sync.WaitGroup
	serve := func(remote string) {
		wg.Add(1)
		go func() { defer wg.Done(); srv.ServeHTTP(httptest.NewRecorder(), request(remote)) }()
	}
	serve("192.0.2.1:1")
	serve("192.0.2.1:2")
	testkit.Eventually(t, 10*time.Second, "two requests of one source in", func() error {
		if n := h.entered(); n != 2 {
			return fmt.Errorf("%d in", n)
		}
		return nil
	})
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, request("192.0.2.1:3"))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), "rate_limited") {
		t.Fatalf("third of one source: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	serve("198.51.100.1:1") // another source takes the node's last slot
	testkit.Eventually(t, 10*time.Second, "the other source in", func() error {
		if n := h.entered(); n != 3 {
			return fmt.Errorf("%d in", n)
		}
		return nil
	})
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, request("203.0.113.1:1")) // waits 50 ms for a slot, then 503
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("past the node's total: %d %s", rec.Code, rec.Body)
	}
	if g.InFlight() != 3 {
		t.Fatalf("in flight %d, want 3", g.InFlight())
	}
	close(h.release)
	wg.Wait()
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, request("192.0.2.1:4"))
	if rec.Code != http.StatusOK || g.InFlight() != 0 || len(g.active) != 0 {
		t.Fatalf("after release: %d, %d in flight, %v", rec.Code, g.InFlight(), g.active)
	}
}

// A waiting request whose client leaves stops waiting and frees its
// source's share.
func TestGateWaiterLeaves(t *testing.T) {
	h := &held{release: make(chan struct{})}
	defer close(h.release)
	g := NewGate(GateConfig{Total: 1, PerSource: 2, Wait: time.Hour})
	srv := g.Wrap(h, Expensive, nil)
	go srv.ServeHTTP(httptest.NewRecorder(), request("192.0.2.1:1"))
	testkit.Eventually(t, 10*time.Second, "the first request in", func() error {
		if h.entered() != 1 {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, request("192.0.2.1:2").WithContext(ctx))
		done <- rec.Code
	}()
	testkit.Eventually(t, 10*time.Second, "the second request waiting", func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.active["192.0.2.1"] != 2 {
			return fmt.Errorf("active %v", g.active)
		}
		return nil
	})
	cancel()
	if code := <-done; code != http.StatusServiceUnavailable {
		t.Fatalf("a waiter whose client left: %d", code)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active["192.0.2.1"] != 1 {
		t.Fatalf("active %v after the waiter left", g.active)
	}
}

func TestExpensive(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/", true}, {"GET", "/threads/x", true}, {"GET", "/threads/x.md", true},
		{"GET", "/feed.atom", true}, {"GET", "/api/v1/threads", true}, {"GET", "/api/v1/search", true},
		{"HEAD", "/threads/x", true}, {"POST", "/mcp", true},
		{"GET", "/healthz", false}, {"GET", "/readyz", false}, {"GET", "/metrics", false},
		{"GET", "/static/site.css", false}, {"GET", "/guide", false}, {"GET", "/llms.txt", false}, {"GET", "/api/v1/openapi.yaml", false}, {"HEAD", "/api/v1/openapi.yaml", false},
		{"POST", "/api/v1/entries", false}, {"DELETE", "/api/v1/admin/entries/x", false},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		if got := Expensive(r); got != tc.want {
			t.Errorf("%s %s: expensive %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}
