package server

import (
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/restarea/restarea/api"
	"github.com/restarea/restarea/cluster"
	"github.com/restarea/restarea/internal/console"
	"github.com/restarea/restarea/internal/httpx"
	"github.com/restarea/restarea/internal/web"
	"github.com/restarea/restarea/mcp"
	"github.com/restarea/restarea/node"
)

// Handler returns a node's whole HTTP surface: the REST API, /mcp, the
// pages, /admin (the console, when an admin token is set), the join
// protocol, /metrics. Every adapter gets the node as its service.
func Handler(n *node.Node, cfg Config) http.Handler {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	mux := http.NewServeMux()
	// The public URL's origin is this site's own, whatever Host a proxy
	// in front passes on.
	origins := slices.Clone(cfg.AllowedOrigins)
	if o := httpx.OriginOf(n.PublicURL()); o != "" {
		origins = append(origins, o)
	}
	// One throttle for both doors to the admin token: the API's bearer
	// auth and the console's sign-in.
	authThrottle := api.NewAuthThrottle(0, 0)
	apiHandler := api.New(api.Config{
		Service:        n,
		Admin:          n,
		AdminToken:     cfg.AdminToken,
		Cluster:        n,
		Search:         n,
		TrustedProxies: cfg.TrustedProxies,
		IPv6SourceBits: cfg.IPv6SourceBits,
		AllowedOrigins: origins,
		AuthThrottle:   authThrottle,
		Ready:          n.Ready,
		ReadyForReads:  n.ReadyForReads,
		Logger:         log,
		Registerer:     n.Registry(),
	})
	mux.Handle("/api/", apiHandler)
	mux.Handle("/healthz", apiHandler)
	mux.Handle("/readyz", apiHandler)
	mux.Handle("/readyz/read", apiHandler)
	join := n.JoinHandler()
	mux.Handle(cluster.PathJoin, join)
	mux.Handle(cluster.PathPeer, join)
	mux.Handle("/mcp", mcp.NewHandler(mcp.Config{
		Service:        n,
		Search:         n,
		TrustedProxies: cfg.TrustedProxies,
		AllowedOrigins: origins,
		IPv6SourceBits: cfg.IPv6SourceBits,
		Logger:         log,
		Version:        n.Version(),
	}))
	// Raft's own series come from a sink this project does not define: a
	// family it ever makes inconsistent is logged and left out, and the
	// rest of the page is still served.
	mux.Handle("/metrics", promhttp.HandlerFor(n.Registry(), promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}))
	if cfg.AdminToken != "" {
		mux.Handle(console.Prefix+"/", console.New(console.Config{
			Admin: n, Cluster: n, Token: cfg.AdminToken, PublicURL: n.PublicURL(),
			TrustedProxies: cfg.TrustedProxies, IPv6SourceBits: cfg.IPv6SourceBits,
			AllowedOrigins: origins, Throttle: authThrottle,
			Peers: n.PeerHTTPClient(3 * time.Second), Logger: log,
		}))
		mux.Handle(console.Prefix, http.RedirectHandler(console.Prefix+"/", http.StatusSeeOther))
	}
	mux.Handle("/", web.New(web.Config{Service: n, Search: n, PublicURL: n.PublicURL(), Logger: log,
		TrustedProxies: cfg.TrustedProxies, IPv6SourceBits: cfg.IPv6SourceBits, Leading: n.IsLeader}))
	return httpx.NoSniff(gate(n, cfg, log, mux))
}

// gate puts the node's expensive requests through one httpx.Gate (unless
// the configuration turns it off) and counts them on /metrics.
func gate(n *node.Node, cfg Config, log *slog.Logger, next http.Handler) http.Handler {
	if cfg.MaxExpensive < 0 {
		return next
	}
	total, perSource := cfg.MaxExpensive, cfg.MaxExpensivePerSource
	if total == 0 {
		total = DefaultMaxExpensive
	}
	switch {
	case perSource == 0:
		perSource = DefaultMaxExpensivePerSource
	case perSource < 0:
		perSource = total // one source may take every slot
	}
	g := httpx.NewGate(httpx.GateConfig{Total: total, PerSource: perSource, Wait: expensiveWait,
		TrustedProxies: cfg.TrustedProxies, IPv6SourceBits: cfg.IPv6SourceBits, Logger: log})
	n.Registry().MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "restarea_http_expensive_in_flight",
		Help: "Expensive requests (page, thread, feed, list and search reads, MCP calls) being served.",
	}, func() float64 { return float64(g.InFlight()) }))
	return g.Wrap(next, httpx.Expensive, func(w http.ResponseWriter, r *http.Request, err error) {
		if r.URL.Path == "/mcp" {
			mcp.WriteRefusal(w, err)
			return
		}
		httpx.WriteError(w, err)
	})
}

// registerConnMetrics exports the public listener's connection counts.
func registerConnMetrics(reg prometheus.Registerer, ln *httpx.LimitListener) {
	refused := func(cap string) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "restarea_http_connections_refused_total",
			Help:        "Connections refused by the public listener's caps, by cap (total or per_source).",
			ConstLabels: prometheus.Labels{"cap": cap},
		}, func() float64 { return float64(ln.Refused(cap)) })
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "restarea_http_connections_open",
			Help: "Connections open on the public HTTP listener.",
		}, func() float64 { return float64(ln.Open()) }),
		refused(httpx.RefusedTotal),
		refused(httpx.RefusedPerSource),
	)
}
