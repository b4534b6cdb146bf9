package node

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
)

// Handler returns the node's whole HTTP surface: the REST API, /mcp, the
// pages, /admin (the console, when an admin token is set), /metrics.
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	// The public URL's origin is this site's own, whatever Host a proxy
	// in front passes on.
	origins := slices.Clone(n.cfg.AllowedOrigins)
	if o := httpx.OriginOf(n.publicURL()); o != "" {
		origins = append(origins, o)
	}
	// One throttle for both doors to the admin token: the API's bearer
	// auth and the console's sign-in.
	authThrottle := api.NewAuthThrottle(0, 0)
	apiHandler := api.New(api.Config{
		Service:        n,
		Admin:          n,
		AdminToken:     n.cfg.AdminToken,
		Cluster:        n,
		Search:         n,
		TrustedProxies: n.cfg.TrustedProxies,
		IPv6SourceBits: n.cfg.IPv6SourceBits,
		AllowedOrigins: origins,
		AuthThrottle:   authThrottle,
		Ready:          n.Ready,
		Logger:         n.log,
		Registerer:     n.reg,
	})
	mux.Handle("/api/", apiHandler)
	mux.Handle("/healthz", apiHandler)
	mux.Handle("/readyz", apiHandler)
	peer := cluster.PublicHandler(n, n.guard)
	mux.Handle(cluster.PathJoin, peer)
	mux.Handle(cluster.PathPeer, peer)
	mux.Handle("/mcp", mcp.NewHandler(mcp.Config{
		Service:        n,
		Search:         n,
		TrustedProxies: n.cfg.TrustedProxies,
		AllowedOrigins: origins,
		IPv6SourceBits: n.cfg.IPv6SourceBits,
		Logger:         n.log,
		Version:        n.cfg.Version,
	}))
	// Raft's own series come from a sink this project does not define: a
	// family it ever makes inconsistent is logged and left out, and the
	// rest of the page is still served.
	mux.Handle("/metrics", promhttp.HandlerFor(n.reg, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      slog.NewLogLogger(n.log.Handler(), slog.LevelWarn),
	}))
	if n.cfg.AdminToken != "" {
		mux.Handle(console.Prefix+"/", console.New(console.Config{
			Admin: n, Cluster: n, Token: n.cfg.AdminToken, PublicURL: n.publicURL(),
			TrustedProxies: n.cfg.TrustedProxies, IPv6SourceBits: n.cfg.IPv6SourceBits,
			AllowedOrigins: origins, Throttle: authThrottle,
			Peers: &http.Client{Timeout: 3 * time.Second}, Logger: n.log,
		}))
		mux.Handle(console.Prefix, http.RedirectHandler(console.Prefix+"/", http.StatusSeeOther))
	}
	mux.Handle("/", web.New(web.Config{Service: n, Search: n, PublicURL: n.publicURL(), Logger: n.log}))
	return httpx.NoSniff(mux)
}

// idleTimeout is how long an idle keep-alive connection is kept: long
// enough for an agent's next call, short enough that idle connections do
// not pile up against the connection caps.
const idleTimeout = 30 * time.Second

func (n *Node) serveHTTP() {
	ln := httpx.NewLimitListener(n.httpLn, httpx.ConnLimits{
		Max: n.cfg.MaxConns, PerSource: n.cfg.MaxConnsPerSource,
		IPv6SourceBits: n.cfg.IPv6SourceBits, TrustedProxies: n.cfg.TrustedProxies,
	})
	n.registerConnMetrics(ln)
	n.httpSrv = &http.Server{
		Handler:           n.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.httpSrv.Serve(ln); err != nil && err != http.ErrServerClosed {
			n.log.Error("http server stopped", "err", err)
		}
	}()
}

// registerConnMetrics exports the public listener's connection counts.
func (n *Node) registerConnMetrics(ln *httpx.LimitListener) {
	n.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "restarea_http_connections_open",
			Help: "Connections open on the public HTTP listener.",
		}, func() float64 { return float64(ln.Open()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "restarea_http_connections_refused_total",
			Help:        "Connections refused by the public listener's caps, by cap (total or per_source).",
			ConstLabels: prometheus.Labels{"cap": httpx.RefusedTotal},
		}, func() float64 { return float64(ln.Refused(httpx.RefusedTotal)) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "restarea_http_connections_refused_total",
			Help:        "Connections refused by the public listener's caps, by cap (total or per_source).",
			ConstLabels: prometheus.Labels{"cap": httpx.RefusedPerSource},
		}, func() float64 { return float64(ln.Refused(httpx.RefusedPerSource)) }),
	)
}
