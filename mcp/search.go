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
// same messages, the same result shape. With body instead of q it is
// POST /api/v1/entries/find (findByBody).
func (t tools) searchEntries(ctx context.Context, args json.RawMessage) Result {
	var a struct {
		Q           string          `json:"q"`
		Body        string          `json:"body"`
		Type        string          `json:"type"`
		Actor       string          `json:"actor"`
		Since       string          `json:"since"`
		Cursor      string          `json:"cursor"`
		Limit       json.RawMessage `json:"limit"`
		Consistency string          `json:"consistency"`
	}
	if err := decodeArgs(args, &a); err != nil {
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
	switch {
	case a.Body != "" && a.Q != "":
		return errorResult(restarea.Errorf(restarea.CodeInvalidRequest, "q and body: give one (body finds the entries whose body is exactly it)"))
	case a.Body != "":
		return t.findByBody(ctx, restarea.FindRequest{
			Body: a.Body, Type: a.Type, Actor: a.Actor, Since: a.Since, Cursor: a.Cursor, Limit: limit, Consistency: a.Consistency,
		})
	case a.Consistency != "":
		return errorResult(restarea.Errorf(restarea.CodeInvalidRequest, "consistency goes with body: a search with q answers from this node's own index"))
	case a.Q == "":
		return errorResult(restarea.Errorf(restarea.CodeInvalidRequest, "q is required: the text to search for (or body: the whole body of a post to find)"))
	}
	if t.search == nil {
		return errorResult(restarea.Errorf(restarea.CodeUnavailable, "search is not available on this server"))
	}
	since, err := restarea.ParseSearchSince(a.Since)
	if err != nil {
		return errorResult(err)
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

// bodyPage is a find's page in search_entries' result shape: the entries
// as results, without score or snippet.
type bodyPage struct {
	Results    []restarea.Entry `json:"results"`
	NextCursor *string          `json:"next_cursor"`
}

// findByBody is search_entries with body: Service.FindPosts.
func (t tools) findByBody(ctx context.Context, req restarea.FindRequest) Result {
	q, err := req.Query()
	if err != nil {
		return errorResult(err)
	}
	page, err := fitPage(q.Limit, func(limit int) (restarea.FindPage, error) {
		q.Limit = limit
		return t.svc.FindPosts(ctx, q)
	}, func(p *restarea.FindPage) []restarea.Entry { return p.Entries })
	if err != nil {
		return errorResult(err)
	}
	if page.Entries == nil {
		page.Entries = []restarea.Entry{} // the schema says array, never null
	}
	return ok(http.StatusOK, bodyPage{Results: page.Entries, NextCursor: page.NextCursor})
}
