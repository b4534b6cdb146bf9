package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
)

// unmatchedRoute labels requests that reached no route, so that metrics
// keep a bounded set of route labels whatever paths clients invent.
const unmatchedRoute = "unmatched"

// recorder remembers the status written and the route that served the
// request, for the log line and the metrics.
type recorder struct {
	http.ResponseWriter
	status int
	route  string
}

// WriteHeader records the first final status.
func (rec *recorder) WriteHeader(code int) {
	if rec.status == 0 && code >= 200 {
		rec.status = code
	}
	rec.ResponseWriter.WriteHeader(code)
}

// Write records the implicit 200 of a body written without WriteHeader.
func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// setRoute labels the request with the pattern that serves it.
func setRoute(w http.ResponseWriter, pattern string) {
	if rec, ok := w.(*recorder); ok {
		rec.route = pattern
	}
}

// healthRoutes are the probes' routes, whose 503 (not ready) is logged
// at DEBUG.
var healthRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/readyz/read": true}

// observe logs every request and feeds the metrics. Bodies, query strings
// and headers are never logged: they hold user text, cursors and the admin
// token.
func (s *server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w, route: unmatchedRoute}
		next.ServeHTTP(rec, r)
		elapsed := time.Since(start)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		level := slog.LevelDebug
		refusal := false
		switch {
		case healthRoutes[rec.route] && rec.status == http.StatusServiceUnavailable:
			// A probe asked and was told "not ready" (starting, no
			// leader): the answer is the state, which the node logs
			// when it changes, not a fault; a prober would repeat a
			// WARN every few seconds.
			level = slog.LevelDebug
		case rec.status == http.StatusServiceUnavailable:
			// No leader, not ready, outcome unknown: expected during
			// failover and from health probes, not a fault of this node.
			level, refusal = slog.LevelWarn, true
		case rec.status >= 500:
			level = slog.LevelError
		case rec.status >= 400:
			// A refusal is the client's doing: anyone can send them as
			// fast as they like, so they are sampled (httpx.LogSampler)
			// and counted in full by the metrics.
			level, refusal = slog.LevelInfo, true
		}
		// Enabled first: most requests are 2xx logged at Debug, usually
		// off, and the source address is not free to compute.
		if refusal && s.refusals.Enabled(r.Context(), level) {
			s.refusals.Log(r.Context(), level, "http request", s.requestAttrs(r, rec.status, elapsed)...)
		} else if !refusal && s.log.Enabled(r.Context(), level) {
			s.log.Log(r.Context(), level, "http request", s.requestAttrs(r, rec.status, elapsed)...)
		}
		if s.metrics != nil {
			s.metrics.observe(rec.route, rec.status, elapsed)
		}
	})
}

// requestAttrs are the attributes of a request's log line.
func (s *server) requestAttrs(r *http.Request, status int, elapsed time.Duration) []any {
	return []any{
		"method", r.Method,
		"path", r.URL.Path,
		"status", status,
		"duration", elapsed,
		"source", httpx.ClientAddr(r, s.proxies),
	}
}

// recoverPanics turns a panic into a logged 500 internal answer, so one bad
// request cannot take the node down. It must run inside observe, whose
// recorder tells it whether an answer was already started.
// http.ErrAbortHandler is passed on: it is net/http's deliberate way to
// abort a response.
func (s *server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("panic serving request",
				"method", r.Method,
				"path", r.URL.Path,
				"panic", fmt.Sprint(p),
				"stack", string(debug.Stack()))
			if rec, ok := w.(*recorder); ok && rec.status != 0 {
				return // the answer has begun; nothing sound can be added
			}
			httpx.WriteError(w, restarea.Errorf(restarea.CodeInternal, "internal error"))
		}()
		next.ServeHTTP(w, r)
	})
}
