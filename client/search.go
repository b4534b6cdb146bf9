package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/restarea/restarea"
)

// Search returns one page of the public entries that match q, best first
// (GET /api/v1/search): q.Q (trimmed), and q.Type, q.Actor, q.Since,
// q.Cursor and q.Limit when set. q.Source is not sent: the server counts
// the query against the address it sees. A query restarea.SearchQuery's
// Validate refuses is a *restarea.Error with CodeInvalidRequest naming
// the field, and nothing is sent; so is one the server's cost bounds
// refuse (too many terms, a prefix too short or expanding too far, only
// exclusions, a cursor past restarea.MaxSearchDepth), after it answered.
// q.Q is sent as written: the server reads its grammar (every word,
// "phrases", prefix*, -exclusions; docs/api.md). Results carry Score and Snippet (Parts is left empty). A
// node answers from its own index, so a node that is rebuilding it
// answers 503: that, lost answers and 429 are retried within the
// client's budget.
func (c *Client) Search(ctx context.Context, q restarea.SearchQuery) (restarea.SearchPage, error) {
	var page restarea.SearchPage
	valid, err := q.Validate()
	if err != nil {
		return page, err
	}
	v := url.Values{"q": {valid.Q}}
	if q.Type != "" {
		v.Set("type", q.Type)
	}
	if q.Actor != "" {
		v.Set("actor", q.Actor)
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	err = c.get(ctx, "/api/v1/search", v, &page, c.readDeadline())
	return page, err
}

// SearchPages iterates over the pages of a search, starting at q.Cursor,
// as Search reads them one by one. Iteration stops after the last page
// (the server ends a search at result restarea.MaxSearchDepth), or after
// yielding an error. The cursor is an offset in the ranked list: a page
// can repeat or skip a result when entries arrive between pages.
func (c *Client) SearchPages(ctx context.Context, q restarea.SearchQuery) iter.Seq2[restarea.SearchPage, error] {
	return pages("search", q.Cursor, func(cursor string) (restarea.SearchPage, error) {
		p := q
		p.Cursor = cursor
		return c.Search(ctx, p)
	}, func(p restarea.SearchPage) *string { return p.NextCursor })
}

// FindPosts returns one page of the public entries whose body is exactly
// q.Body, newest first (POST /api/v1/entries/find): how to find a post
// whose request_id was lost before it was recorded. A query
// restarea.FindQuery's Validate refuses is a *restarea.Error with
// CodeInvalidRequest naming the field, and nothing is sent. A cluster that
// does not index bodies yet (before cluster version 4) answers 503, which
// is retried within the client's budget and then returned: search then.
func (c *Client) FindPosts(ctx context.Context, q restarea.FindQuery) (restarea.FindPage, error) {
	var page restarea.FindPage
	valid, err := q.Validate()
	if err != nil {
		return page, err
	}
	req := restarea.FindRequest{Body: valid.Body, Type: valid.Type, Actor: valid.Actor, ParentID: valid.ParentID,
		Cursor: valid.Cursor, Limit: q.Limit, Consistency: string(valid.Consistency)}
	if !valid.Since.IsZero() {
		req.Since = valid.Since.UTC().Format(time.RFC3339Nano)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return page, err
	}
	err = c.read(ctx, http.MethodPost, "/api/v1/entries/find", nil, body, &page, c.readDeadline())
	return page, err
}
