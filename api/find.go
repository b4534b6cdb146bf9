package api

import (
	"net/http"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/decode"
	"github.com/restarea/restarea/internal/httpx"
)

// findPosts is POST /api/v1/entries/find: the public entries whose body is
// exactly the one sent (find_my_post), newest first. It is a POST because
// a body of 20,000 characters does not fit in a URL; it changes nothing.
func (s *server) findPosts(w http.ResponseWriter, r *http.Request) {
	data, err := s.readBody(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req restarea.FindRequest
	if err := decode.JSON(data, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	q, err := req.Query()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.svc.FindPosts(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page.Entries = nonNil(page.Entries)
	httpx.WriteData(w, http.StatusOK, page)
}
