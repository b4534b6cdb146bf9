package web

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
)

// Cache-Control values. Public pages change whenever a reply arrives, so
// they are cached briefly and revalidated by ETag; error pages are never
// cached, so an entry that was just hidden, or a node that was briefly
// unavailable, leaves nothing behind in a cache.
const (
	cachePage    = "public, max-age=10"
	cacheDoc     = "public, max-age=300"
	cacheAsset   = "public, max-age=31536000, immutable"
	cacheNoStore = "no-store"
)

// Content types of the answers.
const (
	typeHTML     = "text/html; charset=utf-8"
	typeMarkdown = "text/markdown; charset=utf-8"
	typeText     = "text/plain; charset=utf-8"
)

// etagOf returns a strong validator for body: equal bytes, equal tag.
func etagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// etagMatch reports whether an If-None-Match header value names etag. As
// RFC 9110 asks for If-None-Match, the comparison is weak: a W/ prefix is
// ignored.
func etagMatch(header, etag string) bool {
	for _, c := range strings.Split(header, ",") {
		c = strings.TrimSpace(c)
		if c == "*" || strings.TrimPrefix(c, "W/") == etag {
			return true
		}
	}
	return false
}

// serveOK answers 200 with body, its ETag and cacheControl, or 304 Not
// Modified when the client already holds these exact bytes.
func serveOK(w http.ResponseWriter, r *http.Request, contentType, cacheControl string, body []byte) {
	serveModified(w, r, contentType, cacheControl, body, time.Time{})
}

// serveModified is serveOK with a Last-Modified time (none when zero).
// As RFC 9110 section 13.2.2 orders them, If-None-Match decides when the
// request has it, and If-Modified-Since only otherwise.
func serveModified(w http.ResponseWriter, r *http.Request, contentType, cacheControl string, body []byte, modified time.Time) {
	if notModified(w, r, etagOf(body), cacheControl, modified) {
		return
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// notModified sets an answer's validators and cache header and, when the
// request's conditions show the client holds the answer already, answers
// 304 and reports true.
func notModified(w http.ResponseWriter, r *http.Request, etag, cacheControl string, modified time.Time) bool {
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", cacheControl)
	if !modified.IsZero() {
		h.Set("Last-Modified", modified.UTC().Format(http.TimeFormat))
	}
	if inm := r.Header.Values("If-None-Match"); len(inm) > 0 {
		if etagMatch(strings.Join(inm, ","), etag) {
			w.WriteHeader(http.StatusNotModified)
			return true
		}
	} else if notModifiedSince(r.Header.Get("If-Modified-Since"), modified) {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	return false
}

// notModifiedSince reports whether an If-Modified-Since value is at or
// after modified, to the second HTTP dates have.
func notModifiedSince(header string, modified time.Time) bool {
	if header == "" || modified.IsZero() {
		return false
	}
	since, err := http.ParseTime(header)
	return err == nil && !modified.Truncate(time.Second).After(since)
}

// serveError writes an error answer: never cached, with Retry-After when
// the status asks for one.
func serveError(w http.ResponseWriter, r *http.Request, status int, retryAfter int, contentType string, body []byte) {
	h := w.Header()
	h.Del("ETag")
	h.Set("Cache-Control", cacheNoStore)
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// failure is how a page answers a service error.
type failure struct {
	status     int
	retryAfter int
	// message is shown to the reader; only client errors have one, since
	// the service's own words for them describe the request, not the node.
	message string
}

// classify maps a service error to the page's answer. Anything a public
// read should not produce becomes a 500 whose details stay in the log.
func (s *site) classify(r *http.Request, err error) failure {
	code := restarea.ErrorCode(err)
	switch status := httpx.Status(code); status {
	case http.StatusNotFound, http.StatusGone:
		// Missing, hidden, deleted and expired look the same from outside.
		return failure{status: http.StatusNotFound}
	case http.StatusBadRequest:
		return failure{status: status, message: restarea.ErrorMessage(err)}
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		secs := restarea.RetryAfterSeconds(err)
		if secs < 1 {
			secs = 1
		}
		s.busy.Log(r.Context(), slog.LevelWarn, "web: service busy", "path", r.URL.Path, "code", code)
		return failure{status: status, retryAfter: secs}
	}
	if errors.Is(err, context.Canceled) || errors.Is(r.Context().Err(), context.Canceled) {
		// The reader left; there is no one to show a page to.
		s.log.Debug("web: request canceled", "path", r.URL.Path)
		return failure{status: http.StatusServiceUnavailable, retryAfter: 1}
	}
	s.log.Error("web: read failed", "path", r.URL.Path, "err", err)
	return failure{status: http.StatusInternalServerError}
}

// fail answers a service error with the HTML error page.
func (s *site) fail(w http.ResponseWriter, r *http.Request, err error) {
	f := s.classify(r, err)
	s.errorPage(w, r, f.status, f.retryAfter, f.message)
}
