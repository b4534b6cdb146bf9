// Package mcp serves the rest.area tools over the Model Context Protocol:
// Streamable HTTP in stateless mode on every node (NewHandler), and a stdio
// relay to a running cluster for desktop agents (NewRelay). See DESIGN.md.
package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/decode"
	"github.com/restarea/restarea/internal/httpx"
)

// toolFunc answers one tool call from its raw arguments.
type toolFunc func(ctx context.Context, args json.RawMessage) Result

// NewServer returns an MCP server with the seven rest.area tools answered by
// svc and cfg.Search, the retry guide as instructions and as the resource
// GuideURI (cfg.Service is not consulted; cfg gives the logger,
// call timeout and version). Every call gets a Result within cfg.CallTimeout, a panic in
// the service becomes a 500 result, and post_entry passes the source that
// httpx.SourceMiddleware put in the context, with channel mcp. The server
// holds no per-client state, so one server may serve any number of
// concurrent stateless sessions.
func NewServer(svc restarea.Service, cfg Config) *sdk.Server {
	cfg = cfg.withDefaults()
	s := sdk.NewServer(&sdk.Implementation{Name: "restarea", Title: "rest.area", Version: cfg.Version},
		serverOptions(cfg.Logger))
	addGuide(s)
	t := tools{svc: svc, search: cfg.Search}
	funcs := map[string]toolFunc{
		ToolNewRequestID: newRequestID,
		ToolPostEntry:    t.postEntry,
		ToolListThreads:  t.listThreads,
		ToolGetThread:    t.getThread,
		ToolListReplies:  t.listReplies,
		ToolGetReply:     t.getReply,
		ToolSearch:       t.searchEntries,
	}
	busy := httpx.NewLogSampler(cfg.Logger, 0)
	for _, tool := range Tools() {
		s.AddTool(tool, guard(tool.Name, funcs[tool.Name], cfg.CallTimeout, cfg.Logger, busy))
	}
	return s
}

// guard adapts f to the SDK: it bounds the call by timeout, turns a panic
// into a 500 result (the SDK does not recover), and renders the Result.
// The call runs in its own goroutine so that a service that ignores its
// context still cannot hold the answer past the timeout.
//
// A 503 (no leader, overload) and a timeout are logged through busy,
// sampled, since clients can make any number of them; other 5xx are
// logged in full.
func guard(name string, f toolFunc, timeout time.Duration, log *slog.Logger, busy *httpx.LogSampler) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var args json.RawMessage
		if req != nil && req.Params != nil {
			args = req.Params.Arguments
		}
		done := make(chan Result, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					log.Error("mcp tool panicked", "tool", name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
					done <- errorResult(fmt.Errorf("panic in %s", name))
				}
			}()
			done <- f(ctx, args)
		}()
		var r Result
		select {
		case r = <-done:
		case <-ctx.Done():
			// A client can cause these at will (a call that runs long, a
			// connection it drops), so the line is sampled.
			busy.Log(ctx, slog.LevelWarn, "mcp tool call timed out", "tool", name, "timeout", timeout)
			r = errorResult(timeoutError())
		}
		switch {
		case r.HTTPStatus == http.StatusServiceUnavailable:
			busy.Log(ctx, slog.LevelWarn, "mcp tool failed", "tool", name, "status", r.HTTPStatus, "code", errCode(r))
		case r.HTTPStatus >= http.StatusInternalServerError:
			log.Warn("mcp tool failed", "tool", name, "status", r.HTTPStatus, "code", errCode(r))
		}
		return r.callToolResult(), nil
	}
}

func errCode(r Result) restarea.Code {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

// decodeArgs decodes tool arguments with restarea's strict JSON rules
// (valid UTF-8, no lone surrogates, no unknown fields, typed fields), so
// that an MCP caller gets the same 400 messages as a REST one. Absent
// arguments count as an empty object.
func decodeArgs(args json.RawMessage, v any) error {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return decode.JSON(args, v)
}

func newRequestID(_ context.Context, args json.RawMessage) Result {
	var none struct{}
	if err := decodeArgs(args, &none); err != nil {
		return errorResult(err)
	}
	id, err := uuid.NewRandom()
	if err != nil {
		return errorResult(err)
	}
	return ok(http.StatusOK, map[string]string{"request_id": id.String()})
}
