package node

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/restarea/restarea/api"
	"github.com/restarea/restarea/cluster"
	"github.com/restarea/restarea/mcp"
	"github.com/restarea/restarea/web"
)

// Handler returns the node's whole HTTP surface: the REST API, /mcp, the
// pages, /metrics.
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	apiHandler := api.New(api.Config{
		Service:        n,
		Admin:          n,
		AdminToken:     n.cfg.AdminToken,
		Cluster:        n,
		TrustedProxies: n.cfg.TrustedProxies,
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
		TrustedProxies: n.cfg.TrustedProxies,
		AllowedOrigins: n.cfg.AllowedOrigins,
		Logger:         n.log,
		Version:        n.cfg.Version,
	}))
	mux.Handle("/metrics", promhttp.HandlerFor(n.reg, promhttp.HandlerOpts{}))
	mux.Handle("/", web.New(web.Config{Service: n, PublicURL: n.publicURL(), Logger: n.log}))
	return mux
}

func (n *Node) serveHTTP() {
	n.httpSrv = &http.Server{
		Handler:           n.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.httpSrv.Serve(n.httpLn); err != nil && err != http.ErrServerClosed {
			n.log.Error("http server stopped", "err", err)
		}
	}()
}
