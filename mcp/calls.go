package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/decode"
	"github.com/restarea/restarea/internal/httpx"
)

// tools answers the service-backed tool calls.
type tools struct {
	svc    restarea.Service
	search restarea.SearchService // nil: search_entries answers 503
}

// postEntry takes the same path as POST /api/v1/entries: the same decoder,
// then Service.Post (which checks the post's rules), here with channel mcp
// and the source that httpx.SourceMiddleware derived from the peer address.
func (t tools) postEntry(ctx context.Context, args json.RawMessage) Result {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var req restarea.PostRequest
	if err := decode.JSON(args, &req); err != nil {
		return errorResult(err)
	}
	res, err := t.svc.Post(ctx, req, restarea.PostMeta{Source: httpx.Source(ctx), Channel: restarea.ChannelMCP})
	if err != nil {
		return errorResult(err)
	}
	status := http.StatusCreated
	if res.Replayed {
		status = http.StatusOK
	}
	return ok(status, PostedEntry{Entry: res.Entry, Replayed: res.Replayed})
}

type listArgs struct {
	ThreadID    string          `json:"thread_id"`
	Cursor      string          `json:"cursor"`
	Limit       json.RawMessage `json:"limit"`
	Consistency string          `json:"consistency"`
}

type getArgs struct {
	ID          string `json:"id"`
	Consistency string `json:"consistency"`
}

// listOptions checks the paging arguments shared by the list tools.
func listOptions(a listArgs) (restarea.ListOptions, error) {
	c, err := restarea.ParseConsistency(a.Consistency)
	if err != nil {
		return restarea.ListOptions{}, err
	}
	opts := restarea.ListOptions{Cursor: a.Cursor, Consistency: c}
	// The raw JSON is parsed here rather than by the decoder so that 1.5,
	// "3" and 0 all get the REST API's message.
	if len(a.Limit) > 0 && string(a.Limit) != "null" {
		n, err := strconv.Atoi(string(a.Limit))
		if err != nil || n < 1 || n > restarea.MaxPageLimit {
			return opts, restarea.Errorf(restarea.CodeInvalidRequest, "limit must be an integer between 1 and %d", restarea.MaxPageLimit)
		}
		opts.Limit = n
	}
	return opts, nil
}

// entryID checks an id argument; field names it in the message.
func entryID(field, id string) (string, error) {
	if id == "" {
		return "", restarea.Errorf(restarea.CodeInvalidRequest, "%s is required", field)
	}
	if !restarea.ValidUUID(id) {
		return "", restarea.Errorf(restarea.CodeInvalidRequest, "%s must be a UUID in canonical form (8-4-4-4-12 hex digits)", field)
	}
	return strings.ToLower(id), nil
}

func (t tools) listThreads(ctx context.Context, args json.RawMessage) Result {
	var a struct {
		Cursor      string          `json:"cursor"`
		Limit       json.RawMessage `json:"limit"`
		Consistency string          `json:"consistency"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return errorResult(err)
	}
	opts, err := listOptions(listArgs{Cursor: a.Cursor, Limit: a.Limit, Consistency: a.Consistency})
	if err != nil {
		return errorResult(err)
	}
	page, err := fitPage(opts.Limit, func(limit int) (restarea.ThreadPage, error) {
		opts.Limit = limit
		return t.svc.ListThreads(ctx, opts)
	}, func(p *restarea.ThreadPage) []restarea.Entry { return p.Threads })
	if err != nil {
		return errorResult(err)
	}
	if page.Threads == nil {
		page.Threads = []restarea.Entry{} // the schema says array, never null
	}
	return ok(http.StatusOK, page)
}

func (t tools) listReplies(ctx context.Context, args json.RawMessage) Result {
	var a listArgs
	if err := decodeArgs(args, &a); err != nil {
		return errorResult(err)
	}
	id, err := entryID("thread_id", a.ThreadID)
	if err != nil {
		return errorResult(err)
	}
	opts, err := listOptions(a)
	if err != nil {
		return errorResult(err)
	}
	page, err := fitPage(opts.Limit, func(limit int) (restarea.ReplyPage, error) {
		opts.Limit = limit
		return t.svc.ListReplies(ctx, id, opts)
	}, func(p *restarea.ReplyPage) []restarea.Entry { return p.Replies })
	if err != nil {
		return errorResult(err)
	}
	if page.Replies == nil {
		page.Replies = []restarea.Entry{}
	}
	return ok(http.StatusOK, page)
}

// getEntry is get_thread and get_reply, which differ only in the service
// call.
func getEntry(get func(context.Context, string, restarea.ReadOptions) (restarea.Entry, error)) toolFunc {
	return func(ctx context.Context, args json.RawMessage) Result {
		var a getArgs
		if err := decodeArgs(args, &a); err != nil {
			return errorResult(err)
		}
		id, err := entryID("id", a.ID)
		if err != nil {
			return errorResult(err)
		}
		c, err := restarea.ParseConsistency(a.Consistency)
		if err != nil {
			return errorResult(err)
		}
		e, err := get(ctx, id, restarea.ReadOptions{Consistency: c})
		if err != nil {
			return errorResult(err)
		}
		return ok(http.StatusOK, e)
	}
}

func (t tools) getThread(ctx context.Context, args json.RawMessage) Result {
	return getEntry(t.svc.GetThread)(ctx, args)
}

func (t tools) getReply(ctx context.Context, args json.RawMessage) Result {
	return getEntry(t.svc.GetReply)(ctx, args)
}
