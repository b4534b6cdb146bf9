package search

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/restarea/restarea"
)

// Defaults of a node's search gate.
const (
	// DefaultPerSourceConcurrency searches of one source may be in
	// flight (running or waiting for a slot) on a node at once.
	DefaultPerSourceConcurrency = 2
	// queuePerSlot is how many searches may wait per running slot.
	queuePerSlot = 4
	// queueWait bounds how long a search waits for a slot.
	queueWait = 2 * time.Second
	// busyRetry is the retry delay of a search refused for lack of a slot
	// or because its source has its share in flight.
	busyRetry = time.Second
	// maxSources bounds the sources the rate remembers. Past it, new
	// sources share one bucket: a client spread over more addresses than
	// this is limited as one, never let through.
	maxSources = 16384
)

// DefaultSearchRate is the per-source rate of searches: 30 at once, then
// one every two seconds.
var DefaultSearchRate = restarea.Limit{Count: 30, WindowSeconds: 60}

// GateConfig configures a Gate. Zero values take the defaults.
type GateConfig struct {
	// Concurrency is how many searches run at once on the node;
	// 0 → runtime.GOMAXPROCS(0) (a search is CPU-bound, one core each).
	// As many again times four may wait for a slot, each at most two
	// seconds.
	Concurrency int
	// PerSource is how many searches of one source may be in flight at
	// once; 0 → DefaultPerSourceConcurrency.
	PerSource int
	// Rate is each source's token bucket: Count searches at once, refilled
	// at Count per Window; zero → DefaultSearchRate.
	Rate restarea.Limit
	// Now is the clock of the rate (tests); nil → time.Now.
	Now func() time.Time
	// Registerer, when set, receives the gate's metrics.
	Registerer prometheus.Registerer
}

// Gate admits a node's searches: a per-source rate, a per-source share of
// searches in flight, and a node-wide number running at once with a short
// bounded queue. It is the node's one door for searches, whichever
// adapter (REST, MCP, pages) they come from. Refusals: a source over its
// rate or its share gets CodeRateLimited (429) with a retry delay; a full
// node gets CodeUnavailable (503) with a retry delay, since the client
// did nothing wrong and another node, or a moment later, can answer.
type Gate struct {
	cfg   GateConfig
	slots chan struct{}
	queue int // waiters allowed

	mu       sync.Mutex
	buckets  map[string]*bucket
	inFlight map[string]int
	waiting  int

	refused *prometheus.CounterVec
}

type bucket struct {
	tokens float64
	at     time.Time
}

// overflowSource is the shared bucket of sources beyond maxSources.
const overflowSource = "\x00overflow"

// NewGate returns a gate with cfg.
func NewGate(cfg GateConfig) *Gate {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = runtime.GOMAXPROCS(0)
	}
	if cfg.PerSource <= 0 {
		cfg.PerSource = DefaultPerSourceConcurrency
	}
	if cfg.Rate == (restarea.Limit{}) {
		cfg.Rate = DefaultSearchRate
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	g := &Gate{
		cfg: cfg, slots: make(chan struct{}, cfg.Concurrency), queue: queuePerSlot * cfg.Concurrency,
		buckets: map[string]*bucket{}, inFlight: map[string]int{},
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "restarea_search_refused_total",
			Help: "Searches refused before running, by reason: rate (the source's rate), source_busy (the source's share in flight), node_busy (no slot).",
		}, []string{"reason"}),
	}
	if cfg.Registerer != nil {
		running := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "restarea_search_running", Help: "Searches running on this node now.",
		}, func() float64 { return float64(len(g.slots)) })
		cfg.Registerer.MustRegister(g.refused, running)
	}
	return g
}

// Enter admits one search of source, waiting (at most two seconds, or
// until ctx ends) for a slot. On success the caller runs the search and
// then calls leave, exactly once.
func (g *Gate) Enter(ctx context.Context, source string) (leave func(), err error) {
	if err := g.admit(source); err != nil {
		return nil, err
	}
	done := func() { g.depart(source) }
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots; done() }, nil
	default:
	}
	g.mu.Lock()
	if g.waiting >= g.queue {
		g.mu.Unlock()
		done()
		return nil, g.busy()
	}
	g.waiting++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
	}()
	t := time.NewTimer(queueWait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots; done() }, nil
	case <-t.C:
		done()
		return nil, g.busy()
	case <-ctx.Done():
		done()
		return nil, restarea.Errorf(restarea.CodeUnavailable, "search cancelled: %v", ctx.Err())
	}
}

func (g *Gate) busy() error {
	g.refused.WithLabelValues("node_busy").Inc()
	return restarea.Errorf(restarea.CodeUnavailable,
		"this node is running as many searches as it takes (%d, and %d waiting); retry shortly", cap(g.slots), g.queue).
		WithRetryAfter(busyRetry)
}

// admit checks source's share in flight, then spends one of its tokens,
// and counts the search in flight.
func (g *Gate) admit(source string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight[source] >= g.cfg.PerSource {
		g.refused.WithLabelValues("source_busy").Inc()
		return restarea.Errorf(restarea.CodeRateLimited,
			"this source already has %d searches in progress on this node; wait for them to finish", g.cfg.PerSource).
			WithRetryAfter(busyRetry)
	}
	now := g.cfg.Now()
	b := g.bucketOf(source, now)
	g.refill(b, now)
	if b.tokens < 1 {
		g.refused.WithLabelValues("rate").Inc()
		wait := time.Duration((1 - b.tokens) * float64(g.every()))
		return restarea.Errorf(restarea.CodeRateLimited,
			"search rate limit of this source reached (%d per %s); retry after the delay", g.cfg.Rate.Count, g.cfg.Rate.Window()).
			WithRetryAfter(max(wait, time.Second))
	}
	b.tokens--
	g.inFlight[source]++
	return nil
}

func (g *Gate) depart(source string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight[source]--; g.inFlight[source] <= 0 {
		delete(g.inFlight, source)
	}
}

// every is the time one token takes to come back.
func (g *Gate) every() time.Duration {
	return g.cfg.Rate.Window() / time.Duration(g.cfg.Rate.Count)
}

func (g *Gate) refill(b *bucket, now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(float64(g.cfg.Rate.Count), b.tokens+float64(d)/float64(g.every()))
	}
	b.at = now
}

// bucketOf returns source's bucket, making a full one if it has none. At
// the bound it first forgets every bucket that has refilled (those
// sources are back where a stranger starts), then falls back on the
// shared overflow bucket.
func (g *Gate) bucketOf(source string, now time.Time) *bucket {
	if b, ok := g.buckets[source]; ok {
		return b
	}
	if len(g.buckets) >= maxSources {
		for k, b := range g.buckets {
			if g.refill(b, now); b.tokens >= float64(g.cfg.Rate.Count) {
				delete(g.buckets, k)
			}
		}
		if len(g.buckets) >= maxSources {
			source = overflowSource
			if b, ok := g.buckets[source]; ok {
				return b
			}
		}
	}
	b := &bucket{tokens: float64(g.cfg.Rate.Count), at: now}
	g.buckets[source] = b
	return b
}
