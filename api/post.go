package api

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/decode"
	"github.com/restarea/restarea/internal/httpx"
)

// postedEntry is the entry of a post answer: the entry's own JSON plus
// "replayed" (docs/contract.md §4).
type postedEntry struct {
	restarea.Entry
	Replayed bool `json:"replayed"`
}

// postFunc is Service.Post or AdminService.OperatorPost.
type postFunc func(context.Context, restarea.PostRequest, restarea.PostMeta) (restarea.PostResult, error)

// postEntry is POST /api/v1/entries.
func (s *server) postEntry(w http.ResponseWriter, r *http.Request) {
	s.post(w, r, s.svc.Post)
}

// operatorPost is POST /api/v1/admin/entries: a question posted as the
// operator, with the same body and answers as a public post.
func (s *server) operatorPost(w http.ResponseWriter, r *http.Request) {
	s.post(w, r, s.admin.OperatorPost)
}

// post decodes the body strictly and hands it to the service, which
// checks the post's rules before anything is proposed, so a bad request
// touches no state (docs/contract.md §2). The Content-Type is not checked:
// agents commonly send `curl -d`, whose form content type says nothing
// about the JSON it carries.
func (s *server) post(w http.ResponseWriter, r *http.Request, call postFunc) {
	data, err := s.readBody(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req restarea.PostRequest
	if err := decode.JSON(data, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	meta := restarea.PostMeta{Source: httpx.SourceOf(r, s.proxies, s.v6bits), Channel: restarea.ChannelHTTP}
	res, err := call(r.Context(), req, meta)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusCreated
	if res.Replayed {
		status = http.StatusOK
	}
	httpx.WriteData(w, status, postedEntry{Entry: res.Entry, Replayed: res.Replayed})
}

// readBody reads the whole body up to the configured cap.
func (s *server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, restarea.Errorf(restarea.CodePayloadTooLarge, "request body is larger than %d bytes", s.maxBody)
		}
		return nil, restarea.Errorf(restarea.CodeInvalidRequest, "could not read the request body: %v", err)
	}
	return data, nil
}
