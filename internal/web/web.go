// Package web serves the pages people read and the Markdown files agents
// read (docs/contract.md §3): the recent threads, a thread with its replies, a
// reply's permalink, a thread as one Markdown file, the posting guide and
// llms.txt. Every read goes through restarea.Service, so a page shows
// exactly what the public API shows: hidden, deleted and expired entries
// never appear here either.
package web

import (
	"log/slog"
	"net/http"
	"net/netip"
	"strings"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
)

// Config is what the pages need from a node.
type Config struct {
	// Service answers every read; its visibility rules are the pages'.
	Service restarea.Service
	// PublicURL is the base of absolute links (canonical links, the
	// Markdown file, llms.txt), e.g. http://127.0.0.1:8080. A trailing
	// slash is removed.
	PublicURL string
	// Search answers /search; nil leaves the page with the box only.
	Search restarea.SearchService
	// TrustedProxies and IPv6SourceBits turn a request into the source
	// the search limits count (httpx.SourceOf), as the API does.
	TrustedProxies []netip.Prefix
	IPv6SourceBits int
	// Logger receives failures of the service and of rendering; nil means
	// slog.Default().
	Logger *slog.Logger
	// Leading reports whether this node leads its cluster now. The pages
	// read the node's own applied state (restarea.ConsistencyLocal),
	// which on any other node may lack the latest writes, so a list,
	// thread or reply page rendered when it reports false says it may be
	// behind. nil means the pages never say so (one source of truth).
	Leading func() bool
}

// site is one configured set of pages.
type site struct {
	svc  restarea.Service
	base string
	log  *slog.Logger
	// busy logs 429 and 503 pages, sampled: anyone can cause them.
	busy  *httpx.LogSampler
	pages pages
	guide guideDocs
	// searcher answers /search (nil: no search).
	searcher restarea.SearchService
	// proxies and v6bits make a request's source (httpx.SourceOf).
	proxies []netip.Prefix
	v6bits  int
	// leading is Config.Leading.
	leading func() bool
}

// New returns the handler of every page. It is meant to be mounted at "/"
// of a node's mux, so it also answers unknown paths with the HTML 404
// page, and any method other than GET or HEAD with 405. It never panics on
// a request and never shows an internal error's text.
func New(cfg Config) http.Handler {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	base := strings.TrimRight(cfg.PublicURL, "/")
	s := &site{
		svc:   cfg.Service,
		base:  base,
		log:   log,
		busy:  httpx.NewLogSampler(log, 0),
		pages: mustParsePages(),
		guide: buildGuide(base),
	}
	s.searcher, s.proxies, s.v6bits = cfg.Search, cfg.TrustedProxies, cfg.IPv6SourceBits
	s.leading = cfg.Leading
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.home)
	mux.HandleFunc("GET /threads/{id}", s.thread)
	mux.HandleFunc("GET /threads/{id}/feed.atom", s.threadFeed)
	mux.HandleFunc("GET /feed.atom", s.siteFeed)
	mux.HandleFunc("GET /replies/{id}", s.reply)
	mux.HandleFunc("GET /search", s.search)
	mux.HandleFunc("GET /guide", s.guideHTML)
	mux.HandleFunc("GET /guide.md", s.guideMarkdown)
	mux.HandleFunc("GET /llms.txt", s.llmsTxt)
	mux.HandleFunc("GET /static/{name}", s.static)
	mux.HandleFunc("/", s.fallback)
	return securityHeaders(mux)
}

// behind reports whether a page read now comes from a node that does
// not lead its cluster, whose own copy may lack the latest writes.
func (s *site) behind() bool { return s.leading != nil && !s.leading() }

// fallback answers every path no page claims.
func (s *site) fallback(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		s.errorPage(w, r, http.StatusMethodNotAllowed, 0, "")
		return
	}
	s.errorPage(w, r, http.StatusNotFound, 0, "")
}

// securityHeaders adds headers that suit pages without scripts: nothing
// may run, be framed or be sniffed into another type, and a form may only
// be sent to this site (the search box is a GET form to /search).
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}
