// Package server is a rest.area node's public HTTP port. It binds the port,
// starts the node behind it (package node, the Raft core) and serves the
// node's whole HTTP surface: the REST API, /mcp, the pages, /admin (the
// console, when an admin token is set), the join protocol and /metrics.
// `restarea serve`, the in-process chaos run and the tests all start nodes
// through Start, so they run the same wiring.
package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/restarea/restarea/internal/httpx"
	"github.com/restarea/restarea/node"
)

// Config is a node's configuration and its public port's.
type Config struct {
	// Config is the node's; its HTTPAddr is the address to bind (":0"
	// picks a free port, which the node then reports as its own).
	node.Config

	// AdminToken enables the admin API and the console; "" leaves them
	// off (404). It must be at least MinAdminTokenBytes long.
	AdminToken string
	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix
	// AllowedOrigins are browser origins, besides the node's own, allowed
	// to post and to call /mcp (httpx.CrossSite).
	AllowedOrigins []string
	// IPv6SourceBits is the prefix an IPv6 client is counted by (per-source
	// limit, admin throttle, connection cap); 0 → 64.
	IPv6SourceBits int
	// MaxConns and MaxConnsPerSource cap the public listener's open
	// connections (httpx.LimitListener); 0 → 4096 and 256, negative → no cap.
	MaxConns          int
	MaxConnsPerSource int
	// MaxExpensive and MaxExpensivePerSource bound the expensive requests
	// in flight (httpx.Expensive: page, thread, feed, list and search
	// reads, MCP calls) on the node and from one source; 0 → 64 and 8;
	// a negative MaxExpensive turns the bound off, a negative
	// MaxExpensivePerSource lets one source take every slot.
	MaxExpensive          int
	MaxExpensivePerSource int
	// HTTPTLS, when set, makes the public port serve HTTPS only, with it
	// (LoadHTTPS builds one from files); nil serves plain HTTP. TLS runs
	// on top of the connection caps, so they still count connections by
	// source, and a refused client is answered over TLS.
	HTTPTLS *tls.Config
}

// Default bounds of the expensive requests in flight. A request of that
// kind holds at most a few MiB (a list page's JSON at worst about 6 MiB,
// a thread part about 2.3 MB, an MCP answer 4 MiB): 8 from one source
// hold under 50 MiB, 64 on the node under 400 MiB.
const (
	DefaultMaxExpensive          = 64
	DefaultMaxExpensivePerSource = 8
	// expensiveWait is how long a request waits for one of the node's
	// slots before it is answered 503.
	expensiveWait = 2 * time.Second
)

// MinAdminTokenBytes is the shortest admin token a node starts with. With
// failed attempts throttled to one a second per source, 16 random bytes
// are out of reach of guessing; "T" was found in 56 tries.
const MinAdminTokenBytes = 16

func (c Config) validate() error {
	if c.AdminToken != "" && len(c.AdminToken) < MinAdminTokenBytes {
		return fmt.Errorf("--admin-token must be at least %d bytes (it is %d): a short token is guessed; make one with: head -c 24 /dev/urandom | base64", MinAdminTokenBytes, len(c.AdminToken))
	}
	if c.IPv6SourceBits < 0 || c.IPv6SourceBits > 128 {
		return fmt.Errorf("--ipv6-source-prefix must be between 1 and 128 (got %d)", c.IPv6SourceBits)
	}
	return nil
}

// idleTimeout is how long an idle keep-alive connection is kept: long
// enough for an agent's next call, short enough that idle connections do
// not pile up against the connection caps.
const idleTimeout = 30 * time.Second

// shutdownWait bounds a graceful stop's wait for requests in flight.
const shutdownWait = 5 * time.Second

// Start binds cfg.HTTPAddr, starts the node and serves its HTTP surface
// until the node stops: closing the node (Close, Kill) also stops the port.
// The port is bound before the node starts, so the node's URL is known
// before formation or a peer can ask for it; connections that arrive
// meanwhile wait in the listen queue.
func Start(cfg Config) (*node.Node, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = node.Defaults().HTTPAddr
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("http listen %s: %w", cfg.HTTPAddr, err)
	}
	cfg.HTTPAddr = ln.Addr().String()
	cfg.HTTPS = cfg.HTTPTLS != nil
	if cfg.HTTPS {
		// Serving adds to the configuration's protocols: a copy of its
		// own keeps one configuration shareable between nodes.
		cfg.HTTPTLS = cfg.HTTPTLS.Clone()
	}
	n, err := node.Start(cfg.Config)
	if err != nil {
		ln.Close()
		return nil, err
	}
	limited := httpx.NewLimitListener(ln, httpx.ConnLimits{
		Max: cfg.MaxConns, PerSource: cfg.MaxConnsPerSource,
		IPv6SourceBits: cfg.IPv6SourceBits, TrustedProxies: cfg.TrustedProxies,
		TLS: cfg.HTTPTLS,
	})
	registerConnMetrics(n.Registry(), limited)
	srv := &http.Server{
		Handler:           Handler(n, cfg),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    64 << 10,
		TLSConfig:         cfg.HTTPTLS,
		ErrorLog:          serverErrorLog(cfg.Logger),
	}
	serve := func() error { return srv.Serve(limited) }
	if cfg.HTTPTLS != nil {
		// ServeTLS wraps the limited listener, so the caps count raw
		// connections before any handshake, and offers HTTP/2. The
		// handshake runs in the connection's goroutine under the
		// server's read deadlines, so a silent client holds its slot no
		// longer than a plain one.
		serve = func() error { return srv.ServeTLS(limited, "", "") }
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := serve(); err != nil && err != http.ErrServerClosed {
			cfg.Logger.Error("http server stopped", "err", err)
		}
	}()
	n.OnShutdown(func(graceful bool) { stop(srv, served, graceful) })
	return n, nil
}

// stop ends the public port: gracefully, requests in flight get up to
// shutdownWait to finish; otherwise they are cut off, as a crash would.
func stop(srv *http.Server, served <-chan struct{}, graceful bool) {
	if graceful {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
		srv.Shutdown(ctx)
		cancel()
	} else {
		srv.Close()
	}
	<-served
}
