package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/httpx"
)

// RelayConfig configures NewRelay. Zero members get defaults.
type RelayConfig struct {
	// HTTPClient reaches the cluster; nil means a client that gives up
	// connecting after 5 seconds, so a dead server costs little.
	HTTPClient *http.Client
	// AttemptTimeout bounds one forwarded call to one server; 0 means
	// DefaultCallTimeout plus 10 seconds, so that a node's own timeout
	// answer (503 unavailable) arrives before the relay gives up.
	AttemptTimeout time.Duration
	// Logger receives a line for each unreachable server; nil discards.
	Logger *slog.Logger
	// Version is reported as the relay's server version.
	Version string
}

// NewRelay returns an MCP server, meant for stdio, that lists the same six
// tools as a node and forwards each call to servers[i]+"/mcp" (a URL that
// already ends in /mcp is used as is) over Streamable HTTP. A server that
// cannot be reached, or that fails before answering, is skipped for the
// next; the first one that answers has its tool result (or JSON-RPC error)
// passed back unchanged, so a post keeps channel mcp and every status of
// the cluster. When no server answers, the result is 503 unavailable with
// retry_after_seconds 1: the post's outcome is unknown and a retry with the
// same request_id and content settles it. new_request_id is answered
// locally. The relay keeps no session: each call opens its own.
func NewRelay(servers []string, cfg RelayConfig) *sdk.Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = DefaultCallTimeout + 10*time.Second
	}
	if cfg.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
		cfg.HTTPClient = &http.Client{Transport: tr}
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	r := &relay{cfg: cfg, client: sdk.NewClient(&sdk.Implementation{Name: "restarea-relay", Version: cfg.Version}, nil)}
	for _, s := range servers {
		if s = strings.TrimSpace(s); s != "" {
			r.endpoints = append(r.endpoints, endpoint(s))
		}
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "restarea", Title: "rest.area (relay)", Version: cfg.Version},
		&sdk.ServerOptions{
			Logger:       cfg.Logger,
			Instructions: "rest.area is a public board of questions and replies. " + retryProcedure,
			Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
		})
	for _, tool := range Tools() {
		if tool.Name == ToolNewRequestID {
			s.AddTool(tool, guard(tool.Name, newRequestID, cfg.AttemptTimeout, cfg.Logger, httpx.NewLogSampler(cfg.Logger, 0)))
			continue
		}
		s.AddTool(tool, r.forward)
	}
	return s
}

// endpoint turns a server URL into its MCP endpoint.
func endpoint(server string) string {
	server = strings.TrimRight(server, "/")
	if strings.HasSuffix(server, "/mcp") {
		return server
	}
	return server + "/mcp"
}

type relay struct {
	cfg       RelayConfig
	client    *sdk.Client
	endpoints []string
	// preferred is the index of the last server that answered; calls
	// start there, so a dead first server is not waited on every time.
	preferred atomic.Int64
}

// forward tries each endpoint once, starting at the preferred one.
func (r *relay) forward(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	if req == nil || req.Params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call without params"}
	}
	name := req.Params.Name
	var args any = map[string]any{}
	if len(req.Params.Arguments) > 0 {
		args = req.Params.Arguments
	}
	n := len(r.endpoints)
	start := int(r.preferred.Load())
	var failures []string
	for i := range n {
		idx := (start + i) % n
		res, err := r.call(ctx, r.endpoints[idx], name, args)
		if err == nil {
			r.preferred.Store(int64(idx))
			return res, nil
		}
		if rpcErr := serverAnswer(err); rpcErr != nil {
			// The server answered, with a protocol error (e.g. invalid
			// params): that is its answer, not an outage.
			r.preferred.Store(int64(idx))
			return nil, rpcErr
		}
		r.cfg.Logger.Warn("mcp relay: server unreachable", "endpoint", r.endpoints[idx], "tool", name, "err", err)
		failures = append(failures, fmt.Sprintf("%s: %v", r.endpoints[idx], err))
		if ctx.Err() != nil {
			break
		}
	}
	msg := "no rest.area server could be reached"
	if len(failures) > 0 {
		msg += " (" + strings.Join(failures, "; ") + ")"
	}
	msg += "; the outcome is unknown: retry with the same request_id and the same content"
	e := restarea.Errorf(restarea.CodeUnavailable, "%s", msg).WithRetryAfter(time.Second)
	return errorResult(e).callToolResult(), nil
}

// call makes one tool call on one endpoint in a fresh session.
func (r *relay) call(ctx context.Context, url, name string, args any) (*sdk.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.AttemptTimeout)
	defer cancel()
	cs, err := r.client.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint:             url,
		HTTPClient:           r.cfg.HTTPClient,
		MaxRetries:           -1, // the next server is the retry
		DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	return cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
}

// serverAnswer returns the JSON-RPC error a server sent, if err holds one.
// The SDK reports transport failures as JSON-RPC errors too, with the code
// of jsonrpc2.ErrRejected (-32005), so those do not count as answers.
func serverAnswer(err error) *jsonrpc.Error {
	var found *jsonrpc.Error
	walk(err, func(e error) {
		if w, ok := e.(*jsonrpc.Error); ok && w.Code != codeRejected && found == nil {
			found = w
		}
	})
	return found
}

// codeRejected is the code the SDK gives a request its transport could not
// deliver or whose answer it could not read.
const codeRejected = -32005

// walk calls f on err and everything it wraps, depth first; the tree is
// finite, since errors are built before they are returned.
func walk(err error, f func(error)) {
	if err == nil {
		return
	}
	f(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walk(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walk(e, f)
		}
	}
}
