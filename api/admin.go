package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/decode"
	"github.com/restarea/restarea/internal/httpx"
)

// requireToken lets a request through only with "Authorization: Bearer
// TOKEN" carrying the configured token. It runs before routing, so an
// unauthorised caller learns nothing about which admin paths exist. Failed
// attempts are throttled per source (AuthThrottle): past the burst, 429
// with Retry-After, and the token is not even compared.
func (s *server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setRoute(w, "/api/v1/admin/")
		switch res, wait := s.checkToken(r); res {
		case tokenThrottled:
			s.throttled(w, wait)
			return
		case tokenInvalid:
			w.Header().Set("WWW-Authenticate", "Bearer")
			httpx.WriteError(w, restarea.Errorf(restarea.CodeUnauthorized, "a valid admin bearer token is required (Authorization: Bearer TOKEN)"))
			return
		}
		// The audit record of whatever this request changes names its
		// source address.
		source := httpx.SourceOf(r, s.proxies, s.v6bits)
		next.ServeHTTP(w, r.WithContext(restarea.WithOrigin(r.Context(), source)))
	})
}

// tokenResult is what checkToken found.
type tokenResult int

const (
	tokenInvalid   tokenResult = iota // missing, malformed or wrong
	tokenValid                        // the configured token
	tokenThrottled                    // not compared: the source has no attempt left
)

// checkToken judges the request's bearer token under the throttle. A
// request with no token at all is invalid without spending an attempt: it
// guesses nothing.
func (s *server) checkToken(r *http.Request) (tokenResult, time.Duration) {
	token, ok := bearerToken(r)
	if !ok {
		return tokenInvalid, 0
	}
	source := httpx.SourceOf(r, s.proxies, s.v6bits)
	if wait := s.authLimit.Take(source); wait > 0 {
		if s.metrics != nil {
			s.metrics.authThrottled.Inc()
		}
		return tokenThrottled, wait
	}
	// SHA-256 digests are compared in constant time: comparing the tokens
	// themselves would reveal the configured token's length through the
	// time subtle.ConstantTimeCompare takes on unequal lengths.
	got := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(got[:], s.token[:]) == 1 {
		s.authLimit.Refund(source)
		return tokenValid, 0
	}
	if s.metrics != nil {
		s.metrics.authFailures.Inc()
	}
	return tokenInvalid, 0
}

// bearerToken returns the token of an "Authorization: Bearer TOKEN" header.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// throttled answers a source that spent its failed attempts.
func (s *server) throttled(w http.ResponseWriter, wait time.Duration) {
	httpx.WriteError(w, restarea.Errorf(restarea.CodeRateLimited,
		"too many failed admin authentications from this address; retry later").WithRetryAfter(wait))
}

// hideEntry is POST /api/v1/admin/entries/{id}/hide.
func (s *server) hideEntry(w http.ResponseWriter, r *http.Request) {
	s.changeEntry(w, r, s.admin.HideEntry)
}

// unhideEntry is POST /api/v1/admin/entries/{id}/unhide.
func (s *server) unhideEntry(w http.ResponseWriter, r *http.Request) {
	s.changeEntry(w, r, s.admin.UnhideEntry)
}

// changeEntry applies change to the {id} entry and answers the entry.
func (s *server) changeEntry(w http.ResponseWriter, r *http.Request, change func(context.Context, string) (restarea.Entry, error)) {
	id, err := pathID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := change(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpx.WriteData(w, http.StatusOK, e)
}

// deleted is the answer to a delete.
type deleted struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// deleteEntry is POST /api/v1/admin/entries/{id}/delete.
func (s *server) deleteEntry(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.admin.DeleteEntry(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	httpx.WriteData(w, http.StatusOK, deleted{ID: id, Deleted: true})
}

// listEntries is GET /api/v1/admin/entries: every entry, hidden ones
// included.
func (s *server) listEntries(w http.ResponseWriter, r *http.Request) {
	opts, err := listOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.admin.ListEntries(r.Context(), opts)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page.Entries = nonNil(page.Entries)
	httpx.WriteData(w, http.StatusOK, page)
}

// getSettings is GET /api/v1/admin/settings.
func (s *server) getSettings(w http.ResponseWriter, r *http.Request) {
	st, err := s.admin.Settings(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpx.WriteData(w, http.StatusOK, st)
}

// putSettings is PUT /api/v1/admin/settings: a patch of the members it
// carries, checked completely before it is sent to the log.
func (s *server) putSettings(w http.ResponseWriter, r *http.Request) {
	data, err := s.readBody(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var patch restarea.SettingsPatch
	if err := decode.JSON(data, &patch); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := patch.Validate(); err != nil {
		s.fail(w, r, err)
		return
	}
	st, err := s.admin.UpdateSettings(r.Context(), patch)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpx.WriteData(w, http.StatusOK, st)
}

// listAudit is GET /api/v1/admin/audit: the audit trail of operator
// actions, newest first.
func (s *server) listAudit(w http.ResponseWriter, r *http.Request) {
	opts, err := listOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.admin.ListAudit(r.Context(), opts)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if page.Records == nil {
		page.Records = []restarea.AuditRecord{}
	}
	httpx.WriteData(w, http.StatusOK, page)
}
