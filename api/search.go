package api

import (
	"net/http"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
)

// searchEntries is GET /api/v1/search?q=&type=&actor=&since=&cursor=&limit=.
// Results are public entries (no request_id) with a score and a snippet,
// best first; this node's own index answers (503 with Retry-After while it
// is being rebuilt).
func (s *server) searchEntries(w http.ResponseWriter, r *http.Request) {
	q, err := searchQuery(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q.Source = httpx.SourceOf(r, s.proxies, s.v6bits) // the search limits count by it
	page, err := s.search.Search(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if page.Results == nil {
		page.Results = []restarea.SearchResult{}
	}
	httpx.WriteData(w, http.StatusOK, page)
}

// searchQuery reads and validates the search parameters; an error names
// the parameter.
func searchQuery(r *http.Request) (restarea.SearchQuery, error) {
	v, err := query(r)
	if err != nil {
		return restarea.SearchQuery{}, err
	}
	since, err := restarea.ParseSearchSince(v.Get("since"))
	if err != nil {
		return restarea.SearchQuery{}, err
	}
	limit, err := restarea.ParseSearchLimit(v.Get("limit"))
	if err != nil {
		return restarea.SearchQuery{}, err
	}
	return restarea.SearchQuery{
		Q: v.Get("q"), Type: v.Get("type"), Actor: v.Get("actor"), Since: since,
		Cursor: v.Get("cursor"), Limit: limit,
	}.Validate()
}
