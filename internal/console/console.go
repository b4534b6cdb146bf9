// Package console is the operators' browser console at /admin: sign in
// with the admin token, moderate entries, change the settings, watch and
// change the cluster, download a backup. Every action is a call on
// restarea.AdminService or restarea.ClusterService, the same calls the
// admin REST API makes, so the console can do nothing the API cannot and
// changes nothing about what the public pages show. The pages are plain
// HTML forms: no script runs, and the public pages' stylesheet is reused.
package console

import (
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/api"
	"github.com/restarea/restarea/internal/httpx"
)

// Prefix is the path the console is mounted under.
const Prefix = "/admin"

// DefaultSessionTTL is how long a sign-in lasts when Config.SessionTTL is 0.
const DefaultSessionTTL = 12 * time.Hour

// Config is what the console needs from a node.
type Config struct {
	// Admin and Cluster answer every page. With either nil, or Token
	// empty, every /admin path answers 404, as the admin API does.
	Admin   restarea.AdminService
	Cluster restarea.ClusterService
	// Token is the admin token operators sign in with. The session
	// cookies' key is derived from it, so a new token ends every session.
	Token string
	// PublicURL is the node's public base URL: an https one makes the
	// session cookie Secure even when TLS ends at a proxy in front.
	PublicURL string
	// TrustedProxies and IPv6SourceBits decide a request's source for the
	// failed sign-in throttle, as in the admin API.
	TrustedProxies []netip.Prefix
	IPv6SourceBits int
	// AllowedOrigins are the extra origins whose POSTs are served
	// (httpx.CrossSite); any other cross-site POST is refused 403.
	AllowedOrigins []string
	// Throttle counts failed sign-ins per source. The node passes the
	// admin API's own, so both doors share one budget; nil makes one.
	Throttle *api.AuthThrottle
	// Peers, when not nil, fetches each member's public GET
	// /api/v1/cluster for the cluster page (its own applied index); nil
	// shows only this node's view.
	Peers *http.Client
	// SessionTTL is how long a session lasts; 0 means DefaultSessionTTL.
	SessionTTL time.Duration
	// Logger receives sign-ins, actions and failures (never the token);
	// nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock of session expiry; nil means time.Now.
	Now func() time.Time
}

// server is one configured console; its methods are the handlers.
type server struct {
	admin    restarea.AdminService
	cluster  restarea.ClusterService
	keys     keys
	secure   bool
	proxies  []netip.Prefix
	v6bits   int
	origins  []string
	throttle *api.AuthThrottle
	peers    *http.Client
	ttl      time.Duration
	log      *slog.Logger
	// refusals writes the lines of refused requests (cross-site posts,
	// bad CSRF tokens, wrong or throttled sign-ins), sampled: anyone can
	// send those as fast as they like.
	refusals *httpx.LogSampler
	now      func() time.Time
	pages    pages
}

// New returns the handler of every path under Prefix. Without a token (or
// services) it answers 404 everywhere: the console does not exist.
func New(cfg Config) http.Handler {
	if cfg.Token == "" || cfg.Admin == nil || cfg.Cluster == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			securityHeaders(w)
			http.Error(w, "404 page not found", http.StatusNotFound)
		})
	}
	s := &server{
		admin:    cfg.Admin,
		cluster:  cfg.Cluster,
		keys:     deriveKeys(cfg.Token),
		secure:   strings.HasPrefix(strings.ToLower(cfg.PublicURL), "https://"),
		proxies:  cfg.TrustedProxies,
		v6bits:   cfg.IPv6SourceBits,
		origins:  cfg.AllowedOrigins,
		throttle: cfg.Throttle,
		peers:    cfg.Peers,
		ttl:      cfg.SessionTTL,
		log:      cfg.Logger,
		now:      cfg.Now,
		pages:    mustParsePages(),
	}
	if s.throttle == nil {
		s.throttle = api.NewAuthThrottle(0, 0)
	}
	if s.ttl <= 0 {
		s.ttl = DefaultSessionTTL
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.refusals = httpx.NewLogSampler(s.log, 0)
	return s.routes()
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/static/console.css", s.css)
	mux.HandleFunc("GET /admin/login", s.loginForm)
	mux.HandleFunc("POST /admin/login", s.login)
	mux.Handle("POST /admin/logout", s.post(s.logout))
	mux.Handle("GET /admin", s.session(s.home))
	mux.Handle("GET /admin/{$}", s.session(s.home))
	mux.Handle("GET /admin/entries", s.session(s.entries))
	mux.Handle("GET /admin/entries/{id}", s.session(s.entry))
	mux.Handle("GET /admin/entries/{id}/{action}", s.session(s.confirmEntry))
	mux.Handle("POST /admin/entries/{id}/{action}", s.post(s.changeEntry))
	mux.Handle("GET /admin/settings", s.session(s.settings))
	mux.Handle("POST /admin/settings", s.post(s.saveSettings))
	mux.Handle("GET /admin/cluster", s.session(s.clusterPage))
	mux.Handle("GET /admin/cluster/remove", s.session(s.confirmRemove))
	mux.Handle("POST /admin/cluster/remove", s.post(s.removeMember))
	mux.Handle("POST /admin/cluster/transfer", s.post(s.transfer))
	mux.Handle("GET /admin/backup", s.session(s.backup))
	mux.Handle("GET /admin/audit", s.session(s.audit))
	mux.HandleFunc("/admin/", s.notFound)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w)
		mux.ServeHTTP(w, r)
	})
}

// securityHeaders are the public pages' (see web), with forms allowed to
// post to this site only, and nothing stored by any cache: these pages
// show hidden entries and the cluster's addresses.
func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
}
