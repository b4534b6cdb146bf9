package api

import (
	"net/http"
	"sort"
	"strings"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
)

// routes builds the routing table. Patterns carry no method, so that the
// method check (and its JSON 405) is ours rather than ServeMux's plain-text
// one; "/" catches every other path with a JSON 404.
func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	handle := s.handler(mux)
	handle("/api/v1/entries", methods{http.MethodPost: s.postEntry})
	handle("/api/v1/entries/find", methods{http.MethodPost: s.findPosts})
	handle("/api/v1/threads", methods{http.MethodGet: s.listThreads})
	handle("/api/v1/threads/{id}", methods{http.MethodGet: s.getThread})
	handle("/api/v1/threads/{id}/replies", methods{http.MethodGet: s.listReplies})
	handle("/api/v1/replies/{id}", methods{http.MethodGet: s.getReply})
	handle("/healthz", methods{http.MethodGet: s.healthz})
	handle("/readyz", methods{http.MethodGet: s.readyz})
	handle("/readyz/read", methods{http.MethodGet: s.readyzRead})
	handle(OpenAPIPath, methods{http.MethodGet: s.getOpenAPI})
	if s.search != nil {
		handle("/api/v1/search", methods{http.MethodGet: s.searchEntries})
	}
	if s.cluster != nil {
		handle("/api/v1/cluster", methods{http.MethodGet: s.clusterStatus})
	}
	if s.admin != nil {
		// With the admin API off these paths fall through to the 404 below,
		// so nothing tells a caller that an admin API exists.
		admin := s.requireToken(s.adminRoutes())
		mux.Handle("/api/v1/admin", admin)
		mux.Handle("/api/v1/admin/", admin)
	}
	mux.HandleFunc("/", notFound)
	return mux
}

// adminRoutes is the table behind the token check: an authorised caller
// gets the same 404 and 405 answers as on the public routes.
func (s *server) adminRoutes() http.Handler {
	mux := http.NewServeMux()
	handle := s.handler(mux)
	handle("/api/v1/admin/entries", methods{http.MethodGet: s.listEntries, http.MethodPost: s.operatorPost})
	handle("/api/v1/admin/entries/{id}/hide", methods{http.MethodPost: s.hideEntry})
	handle("/api/v1/admin/entries/{id}/unhide", methods{http.MethodPost: s.unhideEntry})
	handle("/api/v1/admin/entries/{id}/delete", methods{http.MethodPost: s.deleteEntry})
	handle("/api/v1/admin/settings", methods{http.MethodGet: s.getSettings, http.MethodPut: s.putSettings})
	handle("/api/v1/admin/audit", methods{http.MethodGet: s.listAudit})
	if s.cluster != nil {
		handle("/api/v1/admin/cluster/members", methods{http.MethodGet: s.clusterMembers})
		handle("/api/v1/admin/cluster/members/{id}", methods{http.MethodDelete: s.removeMember})
		handle("/api/v1/admin/cluster/leadership-transfer", methods{http.MethodPost: s.transferLeadership})
		handle("/api/v1/admin/cluster/finalize-upgrade", methods{http.MethodPost: s.finalizeUpgrade})
		handle("/api/v1/admin/backup", methods{http.MethodGet: s.backup})
	}
	mux.HandleFunc("/", notFound)
	return mux
}

// methods maps an HTTP method to its handler on one path.
type methods map[string]http.HandlerFunc

// route serves one path: it labels the request for logs and metrics and
// dispatches on the method. GET handlers also answer HEAD, as net/http
// drops the body.
type route struct {
	pattern  string
	byMethod methods
	allow    string
}

// handler returns the function that registers a route on mux. Every route
// it registers is also kept in s.table, the list the OpenAPI document is
// checked against (openapi_test.go), so that no route escapes the check.
func (s *server) handler(mux *http.ServeMux) func(pattern string, m methods) {
	return func(pattern string, m methods) {
		names := make([]string, 0, len(m)+1)
		for name := range m {
			names = append(names, name)
		}
		if _, ok := m[http.MethodGet]; ok {
			names = append(names, http.MethodHead)
		}
		sort.Strings(names)
		rt := &route{pattern: pattern, byMethod: m, allow: strings.Join(names, ", ")}
		s.table = append(s.table, rt)
		mux.Handle(pattern, rt)
	}
}

func (rt *route) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setRoute(w, rt.pattern)
	h, ok := rt.byMethod[r.Method]
	if !ok && r.Method == http.MethodHead {
		h, ok = rt.byMethod[http.MethodGet]
	}
	if !ok {
		w.Header().Set("Allow", rt.allow)
		httpx.WriteError(w, restarea.Errorf(restarea.CodeMethodNotAllowed,
			"method %s is not allowed on %s; allowed: %s", r.Method, rt.pattern, rt.allow))
		return
	}
	h(w, r)
}

// crossSiteRoute and foreignHostRoute label the requests refuseCrossSite
// answers, in logs and metrics.
const (
	crossSiteRoute   = "cross-site"
	foreignHostRoute = "foreign-host"
)

// refuseCrossSite answers 403 to a state-changing request (any method but
// GET, HEAD and OPTIONS: posts and every admin change) that a browser sent
// for a page of another site, with the rule /mcp uses (httpx.CrossSite).
// The same requests are refused when DNS rebinding may have brought them
// (httpx.ForeignHost, the rule /mcp uses too): a Host that is none of the
// node's names, on a loopback listener or from a browser.
// Reads stay open to every page: they are public, and a browser does not
// let the other site read the answer. Clients that send no Origin, such as
// curl -d and the SDKs, are served.
func (s *server) refuseCrossSite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if reason, refused := httpx.CrossSite(r, s.origins); refused {
				setRoute(w, crossSiteRoute)
				httpx.WriteError(w, restarea.Errorf(restarea.CodeForbidden, "%s", reason))
				return
			}
			if reason, refused := httpx.ForeignHost(r, s.origins, s.proxies); refused {
				setRoute(w, foreignHostRoute)
				httpx.WriteError(w, restarea.Errorf(restarea.CodeForbidden, "%s", reason))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func notFound(w http.ResponseWriter, r *http.Request) {
	httpx.WriteError(w, restarea.Errorf(restarea.CodeNotFound, "no such endpoint: %s", r.URL.Path))
}
