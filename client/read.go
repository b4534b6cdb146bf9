package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/url"
	"time"

	"github.com/restarea/restarea"
)

// Thread returns the public question id. A question that is missing,
// hidden, deleted or expired (or an id that is a reply) is a
// *restarea.Error with CodeNotFound. Lost answers, 429 and 503 are retried
// within the client's budget.
func (c *Client) Thread(ctx context.Context, id string, opts restarea.ReadOptions) (restarea.Entry, error) {
	var e restarea.Entry
	if err := checkConsistency(opts.Consistency); err != nil {
		return e, err
	}
	err := c.get(ctx, "/api/v1/threads/"+url.PathEscape(id), readQuery(opts.Consistency), &e, c.readDeadline())
	return e, err
}

// Reply returns the public reply id (its question public too), or a
// *restarea.Error with CodeNotFound.
func (c *Client) Reply(ctx context.Context, id string, opts restarea.ReadOptions) (restarea.Entry, error) {
	var e restarea.Entry
	if err := checkConsistency(opts.Consistency); err != nil {
		return e, err
	}
	err := c.get(ctx, "/api/v1/replies/"+url.PathEscape(id), readQuery(opts.Consistency), &e, c.readDeadline())
	return e, err
}

// ListReplies returns one page of the public replies of question
// threadID, oldest first, from opts.Cursor (GET
// /api/v1/threads/{id}/replies). A question that is not public is a
// *restarea.Error with CodeNotFound; options the REST API does not take
// (a Limit outside 0..MaxPageLimit, NewestFirst, an unknown Consistency)
// are a *restarea.Error with CodeInvalidRequest, and nothing is sent.
// Lost answers, 429 and 503 are retried within the client's budget.
func (c *Client) ListReplies(ctx context.Context, threadID string, opts restarea.ListOptions) (restarea.ReplyPage, error) {
	return c.replyPage(ctx, threadID, opts, c.readDeadline())
}

// Replies iterates over the pages of the public replies of question
// threadID, oldest first, starting at opts.Cursor. Iteration stops after
// the last page, or after yielding an error (a question that is not
// public is a *restarea.Error with CodeNotFound). Each page is read with
// the client's retries and deadline.
func (c *Client) Replies(ctx context.Context, threadID string, opts restarea.ListOptions) iter.Seq2[restarea.ReplyPage, error] {
	return c.replies(ctx, threadID, opts, time.Time{})
}

// replies is Replies with one deadline for every page; a zero deadline
// gives each page its own.
func (c *Client) replies(ctx context.Context, threadID string, opts restarea.ListOptions, deadline time.Time) iter.Seq2[restarea.ReplyPage, error] {
	return pages("reply", opts.Cursor, func(cursor string) (restarea.ReplyPage, error) {
		o := opts
		o.Cursor = cursor
		d := deadline
		if d.IsZero() {
			d = c.readDeadline()
		}
		return c.replyPage(ctx, threadID, o, d)
	}, func(p restarea.ReplyPage) *string { return p.NextCursor })
}

func (c *Client) replyPage(ctx context.Context, threadID string, opts restarea.ListOptions, deadline time.Time) (restarea.ReplyPage, error) {
	var page restarea.ReplyPage
	if err := checkList(opts); err != nil {
		return page, err
	}
	err := c.get(ctx, "/api/v1/threads/"+url.PathEscape(threadID)+"/replies", listQuery(opts), &page, deadline)
	return page, err
}

// pages iterates over a paged read from cursor: fetch reads the page at a
// cursor, next gives a page's NextCursor. It stops after the page without
// one, or after yielding an error. what names the list in the error about
// a server that hands back a cursor it already gave, which would
// otherwise loop forever (cursors are opaque, but never repeat).
func pages[P any](what, cursor string, fetch func(cursor string) (P, error), next func(P) *string) iter.Seq2[P, error] {
	return func(yield func(P, error) bool) {
		var zero P
		seen := map[string]bool{}
		if cursor != "" {
			seen[cursor] = true
		}
		for {
			page, err := fetch(cursor)
			if err != nil {
				yield(zero, err)
				return
			}
			if !yield(page, nil) {
				return
			}
			nc := next(page)
			if nc == nil || *nc == "" {
				return
			}
			if seen[*nc] {
				yield(zero, fmt.Errorf("the server repeated a %s cursor", what))
				return
			}
			seen[*nc] = true
			cursor = *nc
		}
	}
}

// checkConsistency refuses a consistency the REST API does not know, so
// that a typo is reported by name instead of by a 400 from the server.
func checkConsistency(cons restarea.Consistency) error {
	switch cons {
	case restarea.ConsistencyLocal, restarea.ConsistencyStrong, restarea.ConsistencyStale:
		return nil
	}
	return restarea.Errorf(restarea.CodeInvalidRequest, "consistency %q: want %q, %q or empty (the node's own state)",
		string(cons), restarea.ConsistencyStrong, restarea.ConsistencyStale)
}

// checkList refuses list options the REST API does not take.
func checkList(opts restarea.ListOptions) error {
	if opts.Limit < 0 || opts.Limit > restarea.MaxPageLimit {
		return restarea.Errorf(restarea.CodeInvalidRequest, "limit must be between 1 and %d (0: the server's default, %d)",
			restarea.MaxPageLimit, restarea.DefaultPageLimit)
	}
	if opts.NewestFirst {
		return restarea.Errorf(restarea.CodeInvalidRequest, "NewestFirst is not offered by the REST API: threads are listed newest first, replies oldest first")
	}
	return checkConsistency(opts.Consistency)
}

func (c *Client) readDeadline() time.Time { return time.Now().Add(c.opts.Deadline) }

func readQuery(cons restarea.Consistency) url.Values {
	q := url.Values{}
	if cons != restarea.ConsistencyLocal {
		q.Set("consistency", string(cons))
	}
	return q
}

func decodeData(data json.RawMessage, out any) error {
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("unreadable answer: %w", err)
	}
	return nil
}
