package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/restarea/restarea"
)

// NewRequestID returns a fresh random (version 4) UUID for a new post.
func NewRequestID() string { return uuid.NewString() }

var errNoJournal = errors.New("not sent: the client has no journal (Options.Journal)")

// postedEntry is the data of a post answer.
type postedEntry struct {
	restarea.Entry
	Replayed bool `json:"replayed"`
}

// Post sends req following docs/contract.md §7 and reports how it ended. An
// empty req.RequestID gets a new one. The request is normalised, then
// recorded in the journal (fsynced) before anything is sent; a lost
// answer, a timeout, 429 and 503 are retried with the same request_id and
// content within Options.MaxAttempts and Options.Deadline; a stored answer
// is read back before the outcome is Confirmed. Post returns an error only
// when the post could not be recorded, in which case nothing was sent.
// The outcome is journaled; an Unconfirmed post stays pending for Resume.
func (c *Client) Post(ctx context.Context, req restarea.PostRequest) (Result, error) {
	if c.journal == nil {
		return Result{RequestID: req.RequestID}, errNoJournal
	}
	if req.RequestID == "" {
		req.RequestID = NewRequestID()
	}
	norm, err := req.Normalize()
	if err != nil {
		return Result{Outcome: Rejected, RequestID: req.RequestID, Code: restarea.ErrorCode(err),
			Reason: "not sent: " + restarea.ErrorMessage(err)}, nil
	}
	if err := c.journal.Begin(norm, c.servers); err != nil {
		if errors.Is(err, ErrJournalConflict) {
			return Result{Outcome: Conflict, RequestID: norm.RequestID, Code: restarea.CodeConflict,
				Reason: "not sent: " + err.Error() + "; send the original content, or use a new request_id for a different post"}, nil
		}
		return Result{RequestID: norm.RequestID}, fmt.Errorf("not sent: %w", err)
	}
	res := c.send(ctx, norm)
	if err := c.journal.Finish(res); err != nil {
		// The outcome is known and returned; a missing outcome record only
		// makes Resume replay the post, which the server answers as a
		// replay.
		c.opts.Logger.Warn("journal: could not record the outcome", "request_id", res.RequestID, "err", err)
	}
	return res, nil
}

// Resume finishes every post the journal holds as pending, one after the
// other, with its original request_id and content, against this client's
// servers. It returns the results in journal order; an error means the
// journal could not be read or a post could not be recorded.
func (c *Client) Resume(ctx context.Context) ([]Result, error) {
	if c.journal == nil {
		return nil, errNoJournal
	}
	pending, err := c.journal.Pending()
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, p := range pending {
		res, err := c.Post(ctx, p.Request)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// send is the retry loop of one post. Every pass sends the same bytes.
func (c *Client) send(ctx context.Context, req restarea.PostRequest) Result {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Deadline)
	defer cancel()
	deadline, _ := ctx.Deadline()
	body, err := json.Marshal(req)
	if err != nil {
		return Result{Outcome: Rejected, RequestID: req.RequestID, Reason: "not sent: " + err.Error()}
	}
	log := c.opts.Logger.With("request_id", req.RequestID)
	res := Result{Outcome: Unconfirmed, RequestID: req.RequestID}
	why := "not sent"
	for attempt := 1; attempt <= c.opts.MaxAttempts; attempt++ {
		if ctx.Err() != nil {
			break
		}
		base := c.server()
		res.Attempts, res.Code = attempt, ""
		a := c.do(ctx, base, http.MethodPost, "/api/v1/entries", nil, body)
		if a.unreachable {
			c.rotate(base)
		}
		done, reason, wait := c.judge(ctx, a, &res, deadline)
		if done {
			return res
		}
		why = reason
		if wait == 0 {
			wait = backoff(attempt, c.opts.BaseBackoff, c.opts.MaxBackoff)
		}
		if attempt == c.opts.MaxAttempts {
			break
		}
		log.Info("post not settled; retrying with the same request_id", "attempt", attempt, "why", why, "wait", wait)
		if !pause(ctx, wait, deadline) {
			if ctx.Err() == nil {
				why += fmt.Sprintf(" (the next try, in %s, would pass the deadline)", wait.Round(time.Millisecond))
			}
			break
		}
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		why += "; cancelled"
	}
	res.Outcome = Unconfirmed
	res.Reason = fmt.Sprintf("%s (after %d attempt(s)); the post is kept pending: resume it with the same request_id", why, res.Attempts)
	return res
}

// judge reads one answer to a post. It fills res and returns done when the
// answer settles the post (any final outcome, or writes disabled without
// waiting); otherwise it says why not, and how long the server asked to
// wait (0: back off).
func (c *Client) judge(ctx context.Context, a answer, res *Result, deadline time.Time) (done bool, why string, wait time.Duration) {
	switch {
	case a.lost != nil:
		return false, "the answer was lost: " + a.lost.Error(), 0
	case a.err == nil && (a.status == http.StatusCreated || a.status == http.StatusOK):
		var e postedEntry
		if json.Unmarshal(a.data, &e) != nil || e.ID == "" || (a.status == http.StatusOK && !e.Replayed) {
			// docs/contract.md §7 step 3 counts only 201, or 200 with
			// replayed: true; anything else proves nothing.
			return false, fmt.Sprintf("answer %d without a readable entry", a.status), 0
		}
		res.ID, res.URL, res.BookmarkURL = e.ID, e.URL, e.BookmarkURL
		if !e.Visible {
			// Stored, by the state machine's own word, and hidden: a public
			// read cannot show it and no retry will change that.
			res.Outcome, res.Hidden = Confirmed, true
			res.Reason = "stored, but hidden by an operator (or its question is): it cannot be read back publicly"
			return true, "", 0
		}
		found, err := c.readBack(ctx, e.Entry, deadline)
		if found {
			res.Outcome, res.Reason = Confirmed, ""
			return true, "", 0
		}
		// A read-back that did not find the entry sends the post again: the
		// replay says whether it was hidden or deleted meanwhile.
		return false, "stored according to the answer, but not read back: " + err.Error(), 0
	case a.err == nil:
		// A 2xx that is neither 201 nor 200 is not an answer this API
		// gives; it says nothing about the entry.
		return false, fmt.Sprintf("unexpected answer %d", a.status), 0
	}
	code, msg := a.err.Code, a.err.Message
	res.Code = code
	switch {
	case a.status == http.StatusConflict:
		res.Outcome, res.Reason = Conflict, "the request_id is stored with different content: "+msg
		return true, "", 0
	case a.status == http.StatusGone:
		res.Outcome, res.Reason = Deleted, "the entry was deleted by an operator: "+msg
		return true, "", 0
	case code == restarea.CodeWritesDisabled && !c.opts.WaitWhileWritesDisabled:
		res.Outcome = Unconfirmed
		res.Reason = "writes are disabled by the operators; the post is kept pending: resume it when writes are enabled again"
		return true, "", 0
	case a.status == http.StatusTooManyRequests || a.status >= 500:
		return false, fmt.Sprintf("%d %s: %s", a.status, codeOr(code, "error"), msg), a.retryAfter
	}
	res.Outcome = Rejected
	res.Reason = fmt.Sprintf("%d %s: %s", a.status, codeOr(code, "rejected"), msg)
	return true, "", 0
}

func codeOr(c restarea.Code, alt string) string {
	if c == "" {
		return alt
	}
	return string(c)
}
