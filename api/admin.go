package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/httpx"
)

// requireToken lets a request through only with "Authorization: Bearer
// TOKEN" carrying the configured token. It runs before routing, so an
// unauthorised caller learns nothing about which admin paths exist.
func (s *server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setRoute(w, "/api/v1/admin/")
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			httpx.WriteError(w, restarea.Errorf(restarea.CodeUnauthorized, "a valid admin bearer token is required (Authorization: Bearer TOKEN)"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized compares SHA-256 digests in constant time: comparing the
// tokens themselves would reveal the configured token's length through the
// time subtle.ConstantTimeCompare takes on unequal lengths.
func (s *server) authorized(r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return false
	}
	got := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(got[:], s.token[:]) == 1
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
	if err := restarea.DecodeJSON(data, &patch); err != nil {
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
