package api

import (
	"context"
	"net/http"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
)

// listThreads is GET /api/v1/threads.
func (s *server) listThreads(w http.ResponseWriter, r *http.Request) {
	opts, err := listOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.svc.ListThreads(r.Context(), opts)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page.Threads = nonNil(page.Threads)
	httpx.WriteData(w, http.StatusOK, page)
}

// getThread is GET /api/v1/threads/{id}.
func (s *server) getThread(w http.ResponseWriter, r *http.Request) {
	s.getEntry(w, r, s.svc.GetThread)
}

// getReply is GET /api/v1/replies/{id}.
func (s *server) getReply(w http.ResponseWriter, r *http.Request) {
	s.getEntry(w, r, s.svc.GetReply)
}

// getEntry serves a single-entry read through get.
func (s *server) getEntry(w http.ResponseWriter, r *http.Request, get func(context.Context, string, restarea.ReadOptions) (restarea.Entry, error)) {
	id, err := pathID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	opts, err := readOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := get(r.Context(), id, opts)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpx.WriteData(w, http.StatusOK, e)
}

// listReplies is GET /api/v1/threads/{id}/replies.
func (s *server) listReplies(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	opts, err := listOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.svc.ListReplies(r.Context(), id, opts)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page.Replies = nonNil(page.Replies)
	httpx.WriteData(w, http.StatusOK, page)
}

// nonNil makes an empty list render as [] rather than null.
func nonNil(es []restarea.Entry) []restarea.Entry {
	if es == nil {
		return []restarea.Entry{}
	}
	return es
}
