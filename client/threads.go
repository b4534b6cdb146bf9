package client

import (
	"context"
	"iter"

	"github.com/restarea/restarea"
)

// ListThreads returns one page of public questions, newest first, from
// opts.Cursor (GET /api/v1/threads). Its NextCursor continues after its
// last question and is nil on the last page; pages never skip or repeat a
// question while new ones arrive. Options the REST API does not take (a
// Limit outside 0..MaxPageLimit, NewestFirst, an unknown Consistency) are
// a *restarea.Error with CodeInvalidRequest, and nothing is sent. Lost
// answers, 429 and 503 are retried within the client's budget.
func (c *Client) ListThreads(ctx context.Context, opts restarea.ListOptions) (restarea.ThreadPage, error) {
	var page restarea.ThreadPage
	if err := checkList(opts); err != nil {
		return page, err
	}
	err := c.get(ctx, "/api/v1/threads", listQuery(opts), &page, c.readDeadline())
	return page, err
}

// Threads iterates over the pages of public questions, newest first,
// starting at opts.Cursor, as ListThreads reads them one by one. Iteration
// stops after the last page, or after yielding an error. Each page is read
// with the client's retries and deadline; breaking out of the loop stops
// the reads.
func (c *Client) Threads(ctx context.Context, opts restarea.ListOptions) iter.Seq2[restarea.ThreadPage, error] {
	return pages("thread", opts.Cursor, func(cursor string) (restarea.ThreadPage, error) {
		o := opts
		o.Cursor = cursor
		return c.ListThreads(ctx, o)
	}, func(p restarea.ThreadPage) *string { return p.NextCursor })
}
