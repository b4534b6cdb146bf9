package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
)

// searchEntries is GET /api/v1/search as a tool: the same checks and the
// same messages, the same result shape.
func (t tools) searchEntries(ctx context.Context, args json.RawMessage) Result {
	if t.search == nil {
		return errorResult(restarea.Errorf(restarea.CodeUnavailable, "search is not available on this server"))
	}
	var a struct {
		Q      string          `json:"q"`
		Type   string          `json:"type"`
		Actor  string          `json:"actor"`
		Since  string          `json:"since"`
		Cursor string          `json:"cursor"`
		Limit  json.RawMessage `json:"limit"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return errorResult(err)
	}
	since, err := restarea.ParseSearchSince(a.Since)
	if err != nil {
		return errorResult(err)
	}
	limit := 0
	// Parsed from the raw JSON so that 1.5, "3" and 0 get REST's message.
	if len(a.Limit) > 0 && string(a.Limit) != "null" {
		n, err := strconv.Atoi(string(a.Limit))
		if err != nil || n < 1 || n > restarea.MaxSearchLimit {
			return errorResult(restarea.Errorf(restarea.CodeInvalidRequest, "limit must be an integer between 1 and %d", restarea.MaxSearchLimit))
		}
		limit = n
	}
	q, err := restarea.SearchQuery{Q: a.Q, Type: a.Type, Actor: a.Actor, Since: since, Cursor: a.Cursor, Limit: limit}.Validate()
	if err != nil {
		return errorResult(err)
	}
	q.Source = httpx.Source(ctx) // the search limits count by it
	page, err := fitPage(q.Limit, func(limit int) (restarea.SearchPage, error) {
		q.Limit = limit
		return t.search.Search(ctx, q)
	}, func(p *restarea.SearchPage) []restarea.SearchResult { return p.Results })
	if err != nil {
		return errorResult(err)
	}
	if page.Results == nil {
		page.Results = []restarea.SearchResult{}
	}
	return ok(http.StatusOK, page)
}
