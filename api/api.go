// Package api is the REST adapter of rest.area (docs/contract.md §§2–5). It
// turns requests under /api/, /healthz and /readyz into calls on
// restarea.Service and restarea.AdminService, and their results and errors
// into the JSON shapes of docs/contract.md §4. It checks syntax only (JSON,
// field types and lengths, UUIDs, query parameters); every decision that
// depends on stored state is the service's.
package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
)

// DefaultMaxBodyBytes is the request body cap when Config.MaxBodyBytes is 0:
// the largest valid post in its largest encoding (restarea.MaxPostJSONBytes,
// about 244 KiB), so that no valid post is ever refused 413 for how it was
// escaped.
const DefaultMaxBodyBytes = restarea.MaxPostJSONBytes

// Config configures the handler returned by New.
type Config struct {
	// Service answers posts and public reads. Required.
	Service restarea.Service
	// Admin answers the operators' routes. When it is nil or AdminToken is
	// empty, every /api/v1/admin/ route answers 404 not_found.
	Admin restarea.AdminService
	// AdminToken is the bearer token the admin routes require.
	AdminToken string
	// Cluster answers GET /api/v1/cluster and, with the admin API on, the
	// membership and backup routes. Nil leaves them out (404).
	Cluster restarea.ClusterService
	// Search answers GET /api/v1/search. Nil leaves it out (404).
	Search restarea.SearchService
	// TrustedProxies are the peers whose X-Forwarded-For is believed when
	// deciding a post's source (see httpx.ClientAddr).
	TrustedProxies []netip.Prefix
	// IPv6SourceBits is the prefix length an IPv6 client is counted by,
	// for the per-source post limit and the admin throttle
	// (httpx.SourceKey); 0 means httpx.DefaultIPv6SourceBits (a /64).
	IPv6SourceBits int
	// AllowedOrigins are the browser origins, besides the request's own
	// host, whose state-changing requests are served (httpx.CrossSite);
	// any other cross-site POST, PUT or DELETE is 403 forbidden.
	AllowedOrigins []string
	// Ready reports whether the node can serve: nil error means ready. A
	// nil Ready means always ready.
	Ready func() error
	// ReadyForReads reports whether the node serves reads from its own
	// state (GET /readyz/read): unlike Ready it needs no leader. A nil
	// ReadyForReads means always ready.
	ReadyForReads func() error
	// Logger receives request and panic logs; nil means slog.Default().
	Logger *slog.Logger
	// MaxBodyBytes caps request bodies; 0 means DefaultMaxBodyBytes. A
	// larger body is answered 413 payload_too_large.
	MaxBodyBytes int64
	// AuthBurst failed admin authentications a source may make at once,
	// then one per AuthEvery (429 with Retry-After meanwhile); 0 means
	// DefaultAuthBurst and DefaultAuthEvery.
	AuthBurst int
	AuthEvery time.Duration
	// AuthThrottle, when not nil, is the throttle to count failures in
	// (AuthBurst and AuthEvery are then ignored): a node shares one with
	// its admin console.
	AuthThrottle *AuthThrottle
	// Registerer, when not nil, receives restarea_http_requests_total
	// {route,code} and restarea_http_request_duration_seconds{route}.
	Registerer prometheus.Registerer
}

// server holds the resolved configuration; its methods are the handlers.
type server struct {
	svc       restarea.Service
	admin     restarea.AdminService // nil when the admin API is off
	cluster   restarea.ClusterService
	search    restarea.SearchService // nil: no search route
	token     [sha256.Size]byte      // hash of the admin token
	proxies   []netip.Prefix
	v6bits    int
	origins   []string
	ready     func() error
	readyRead func() error
	log       *slog.Logger
	// refusals writes the log lines of 4xx and 503 answers, sampled.
	refusals *httpx.LogSampler
	maxBody  int64
	metrics  *metrics // nil when no Registerer is configured
	// authLimit throttles failed admin authentications per source.
	authLimit *AuthThrottle
	// table is every route routes registered, public and admin.
	table []*route
}

// New returns the handler for "/api/", "/healthz", "/readyz" and "/readyz/read". Every
// answer it writes is JSON in the shapes of docs/contract.md §4: unknown paths
// are 404 not_found, a known path with the wrong method is 405
// method_not_allowed with an Allow header, and a panic in a handler or the
// service is logged and answered 500 internal. New panics if cfg.Service is
// nil, since no request could be served.
func New(cfg Config) http.Handler {
	s := newServer(cfg)
	return s.observe(s.recoverPanics(s.refuseCrossSite(s.routes())))
}

// newServer resolves cfg; its routes are not built yet.
func newServer(cfg Config) *server {
	if cfg.Service == nil {
		panic("api: Config.Service is required")
	}
	s := &server{
		svc:       cfg.Service,
		cluster:   cfg.Cluster,
		search:    cfg.Search,
		proxies:   cfg.TrustedProxies,
		v6bits:    cfg.IPv6SourceBits,
		origins:   cfg.AllowedOrigins,
		ready:     cfg.Ready,
		readyRead: cfg.ReadyForReads,
		log:       cfg.Logger,
		maxBody:   cfg.MaxBodyBytes,
	}
	if cfg.Admin != nil && cfg.AdminToken != "" {
		s.admin = cfg.Admin
		s.token = sha256.Sum256([]byte(cfg.AdminToken))
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.refusals = httpx.NewLogSampler(s.log, 0)
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if cfg.Registerer != nil {
		s.metrics = newMetrics(cfg.Registerer, s.log)
	}
	s.authLimit = cfg.AuthThrottle
	if s.authLimit == nil {
		s.authLimit = newAuthThrottle(cfg.AuthBurst, cfg.AuthEvery, nil)
	}
	return s
}

// fail answers err through the one code→status table of httpx.WriteError.
// An error that is not a *restarea.Error is logged here, because the client
// is only told "internal error".
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var e *restarea.Error
	if !errors.As(err, &e) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			// The service ran out of time or the client went away; for a
			// post the outcome is unknown, which is what 503 unavailable
			// means, and a retry with the same request_id resolves it.
			err = restarea.Errorf(restarea.CodeUnavailable, "the request was cancelled or timed out before the cluster answered; retry it")
		} else {
			s.log.Error("service error", "method", r.Method, "path", r.URL.Path, "err", err)
		}
	}
	httpx.WriteError(w, err)
}
