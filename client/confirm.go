package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/restarea/restarea"
)

// errNotFound means a read answered and the entry is not there.
var errNotFound = errors.New("not found by a strong read")

// readBack reads e back as docs/contract.md §7 step 3 says: a question by its
// id, a reply by paging its question's replies until the id turns up. It
// reads with consistency=strong, so "not found" is not a stale follower.
// It returns false with errNotFound when the entry is definitely not
// publicly readable, or with the last transient error when the budget ran
// out.
func (c *Client) readBack(ctx context.Context, e restarea.Entry, deadline time.Time) (bool, error) {
	q := url.Values{"consistency": {"strong"}}
	if e.Type != restarea.TypeReply {
		var got restarea.Entry
		err := c.get(ctx, "/api/v1/threads/"+url.PathEscape(e.ID), q, &got, deadline)
		switch {
		case err == nil && got.ID == e.ID:
			return true, nil
		case err == nil:
			return false, fmt.Errorf("read back entry %s instead of %s", got.ID, e.ID)
		case restarea.ErrorCode(err) == restarea.CodeNotFound:
			return false, errNotFound
		}
		return false, err
	}
	opts := restarea.ListOptions{Limit: restarea.MaxPageLimit, Consistency: restarea.ConsistencyStrong}
	for page, err := range c.replies(ctx, e.ParentID, opts, deadline) {
		if err != nil {
			if restarea.ErrorCode(err) == restarea.CodeNotFound {
				return false, errNotFound
			}
			return false, err
		}
		for _, r := range page.Replies {
			if r.ID == e.ID {
				return true, nil
			}
		}
	}
	return false, errNotFound
}

// get reads one JSON data member from the current server into out,
// retrying a lost answer, 429 and 503 (moving to the next server when one
// is unreachable) within MaxAttempts and deadline. A definite error answer
// is returned as a *restarea.Error.
func (c *Client) get(ctx context.Context, path string, q url.Values, out any, deadline time.Time) error {
	return c.read(ctx, http.MethodGet, path, q, nil, out, deadline)
}

// read is get with any method and a body: a request that changes nothing
// (a find sent as a POST) is retried as a GET is.
func (c *Client) read(ctx context.Context, method, path string, q url.Values, body []byte, out any, deadline time.Time) error {
	var last error
	for attempt := 1; attempt <= c.opts.MaxAttempts; attempt++ {
		base := c.server()
		a := c.do(ctx, base, method, path, q, body)
		var wait time.Duration
		switch {
		case a.lost != nil:
			last = a.lost
			if a.unreachable {
				c.rotate(base)
			}
			wait = backoff(attempt, c.opts.BaseBackoff, c.opts.MaxBackoff)
		case a.err == nil: // a 2xx with a data member
			if err := decodeData(a.data, out); err != nil {
				last = err
				wait = backoff(attempt, c.opts.BaseBackoff, c.opts.MaxBackoff)
				break
			}
			return nil
		case a.status == http.StatusTooManyRequests || a.status >= 500:
			last = a.err
			wait = a.retryAfter
			if wait == 0 {
				wait = backoff(attempt, c.opts.BaseBackoff, c.opts.MaxBackoff)
			}
		default:
			if a.err.Code == "" {
				a.err.Code = restarea.CodeInvalidRequest
				if a.status == http.StatusNotFound {
					a.err.Code = restarea.CodeNotFound
				}
			}
			return a.err
		}
		if attempt == c.opts.MaxAttempts || !pause(ctx, wait, deadline) {
			break
		}
	}
	if last == nil {
		last = ctx.Err()
	}
	return fmt.Errorf("read %s: %w", path, last)
}
