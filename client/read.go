package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"strconv"
	"time"

	"github.com/restarea/restarea"
)

// Thread returns the public question id. A question that is missing,
// hidden, deleted or expired (or an id that is a reply) is a
// *restarea.Error with CodeNotFound. Lost answers, 429 and 503 are retried
// within the client's budget.
func (c *Client) Thread(ctx context.Context, id string, opts restarea.ReadOptions) (restarea.Entry, error) {
	var e restarea.Entry
	err := c.get(ctx, "/api/v1/threads/"+url.PathEscape(id), readQuery(opts.Consistency), &e, c.readDeadline())
	return e, err
}

// Reply returns the public reply id (its question public too), or a
// *restarea.Error with CodeNotFound.
func (c *Client) Reply(ctx context.Context, id string, opts restarea.ReadOptions) (restarea.Entry, error) {
	var e restarea.Entry
	err := c.get(ctx, "/api/v1/replies/"+url.PathEscape(id), readQuery(opts.Consistency), &e, c.readDeadline())
	return e, err
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
	return func(yield func(restarea.ReplyPage, error) bool) {
		cursor := opts.Cursor
		seen := map[string]bool{}
		for {
			q := readQuery(opts.Consistency)
			if opts.Limit > 0 {
				q.Set("limit", strconv.Itoa(opts.Limit))
			}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			d := deadline
			if d.IsZero() {
				d = c.readDeadline()
			}
			var page restarea.ReplyPage
			if err := c.get(ctx, "/api/v1/threads/"+url.PathEscape(threadID)+"/replies", q, &page, d); err != nil {
				yield(restarea.ReplyPage{}, err)
				return
			}
			if !yield(page, nil) || page.NextCursor == nil || *page.NextCursor == "" {
				return
			}
			// The cursor is opaque, but a server that hands back one it
			// already gave would have us loop forever.
			if seen[*page.NextCursor] {
				yield(restarea.ReplyPage{}, errors.New("the server repeated a reply cursor"))
				return
			}
			seen[*page.NextCursor] = true
			cursor = *page.NextCursor
		}
	}
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
