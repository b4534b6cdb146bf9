package httpx

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/restarea/restarea"
)

// GateConfig sizes a Gate.
type GateConfig struct {
	// Total is how many expensive requests the node serves at once.
	Total int
	// PerSource is how many of them one source may have in flight.
	PerSource int
	// Wait is how long a request waits for a slot of Total before it is
	// refused.
	Wait time.Duration
	// TrustedProxies and IPv6SourceBits say what a source is (SourceOf).
	TrustedProxies []netip.Prefix
	IPv6SourceBits int
	Logger         *slog.Logger
}

// Gate bounds the expensive requests in flight — reads that materialise
// pages, threads, feeds, searches and MCP calls — so that what one source
// can make a node hold at once is its share times what one request may
// hold. A request beyond its source's share is answered 429 at once (the
// source is the one to slow down); one beyond the node's total waits up
// to Wait for a slot, then gets 503 (the node is full, another node or a
// moment later can answer). Both carry Retry-After: 1.
type Gate struct {
	cfg      GateConfig
	slots    chan struct{}
	refusals *LogSampler

	mu     sync.Mutex
	active map[string]int
}

// NewGate returns a gate; Total and PerSource below 1 mean 1.
func NewGate(cfg GateConfig) *Gate {
	cfg.Total, cfg.PerSource = max(cfg.Total, 1), max(cfg.PerSource, 1)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Gate{cfg: cfg, slots: make(chan struct{}, cfg.Total), refusals: NewLogSampler(cfg.Logger, 0),
		active: make(map[string]int)}
}

// Wrap serves the requests expensive reports through the gate and the rest
// straight through. refuse answers a refused request (WriteError when nil).
func (g *Gate) Wrap(next http.Handler, expensive func(*http.Request) bool, refuse func(http.ResponseWriter, *http.Request, error)) http.Handler {
	if refuse == nil {
		refuse = func(w http.ResponseWriter, _ *http.Request, err error) { WriteError(w, err) }
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !expensive(r) {
			next.ServeHTTP(w, r)
			return
		}
		release, err := g.enter(r.Context(), SourceOf(r, g.cfg.TrustedProxies, g.cfg.IPv6SourceBits))
		if err != nil {
			g.refusals.Log(r.Context(), slog.LevelInfo, "expensive request refused", "path", r.URL.Path, "reason", restarea.ErrorMessage(err))
			refuse(w, r, err)
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

// enter takes a place for source, or says why not.
func (g *Gate) enter(ctx context.Context, source string) (func(), error) {
	g.mu.Lock()
	if g.active[source] >= g.cfg.PerSource {
		g.mu.Unlock()
		return nil, restarea.Errorf(restarea.CodeRateLimited,
			"this address already has %d requests of this kind in flight; send the next when one has answered", g.cfg.PerSource).
			WithRetryAfter(time.Second)
	}
	g.active[source]++
	g.mu.Unlock()
	leave := func() {
		g.mu.Lock()
		if g.active[source]--; g.active[source] <= 0 {
			delete(g.active, source)
		}
		g.mu.Unlock()
	}
	t := time.NewTimer(g.cfg.Wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots; leave() }, nil
	case <-t.C:
	case <-ctx.Done():
	}
	leave()
	return nil, restarea.Errorf(restarea.CodeUnavailable,
		"this node is serving %d requests of this kind; try again, here or on another node", g.cfg.Total).
		WithRetryAfter(time.Second)
}

// InFlight returns how many expensive requests are being served.
func (g *Gate) InFlight() int { return len(g.slots) }

// Expensive reports whether a request to the public port reads enough to
// go through the gate: every GET and HEAD except the probes, /metrics,
// static files and documents the binary carries (the guide, llms.txt, the
// OpenAPI document), every POST to /mcp and every find of a post by its
// body (a read, sent as a POST). Posts to the REST API are bounded by
// their body and the per-source post limit instead.
func Expensive(r *http.Request) bool {
	p := r.URL.Path
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case p == "/healthz", p == "/readyz", p == "/metrics", p == "/favicon.ico", p == "/robots.txt",
			p == "/guide", p == "/guide.md", p == "/llms.txt", p == "/api/v1/openapi.yaml",
			strings.HasPrefix(p, "/static/"), strings.HasPrefix(p, "/admin/static/"):
			return false
		}
		return true
	case http.MethodPost:
		return p == "/mcp" || p == "/api/v1/entries/find"
	}
	return false
}

// String describes the gate's sizes, for logs.
func (g *Gate) String() string {
	return fmt.Sprintf("%d at once, %d per source, %s wait", g.cfg.Total, g.cfg.PerSource, g.cfg.Wait)
}
