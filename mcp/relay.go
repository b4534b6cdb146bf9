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
	"github.com/restarea/restarea/internal/httpx"
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
	// ConnectTimeout bounds reaching one server and getting its first
	// answer (the session handshake, before the tool call is sent); 0
	// means DefaultRelayConnectTimeout. It is separate from
	// AttemptTimeout, so a server that accepts connections but never
	// answers costs seconds, not a whole call timeout.
	ConnectTimeout time.Duration
	// DeadFor is how long a server that could not be reached is tried
	// only after the others; 0 means DefaultRelayDeadFor. After it, the
	// server takes its turn again.
	DeadFor time.Duration
	// Logger receives a line for each unreachable server; nil discards.
	Logger *slog.Logger
	// Version is reported as the relay's server version.
	Version string
}

// Relay defaults.
const (
	DefaultRelayConnectTimeout = 3 * time.Second
	DefaultRelayDeadFor        = 30 * time.Second
)

// NewRelay returns an MCP server, meant for stdio, that lists the same
// tools, instructions and guide resource as a node (the guide answered
// here) and forwards each call to servers[i]+"/mcp" (a URL that
// already ends in /mcp is used as is) over Streamable HTTP. A server that
// cannot be reached, or that fails before answering, is skipped for the
// next (a server must answer the session handshake within
// cfg.ConnectTimeout), and one found unreachable is tried last for
// cfg.DeadFor; the first one that answers has its tool result (or JSON-RPC error)
// passed back unchanged, so a post keeps channel mcp and every status of
// the cluster. When no server answers, the result is 503 unavailable with
// retry_after_seconds 1: the post's outcome is unknown and a retry with the
// same request_id and content settles it. new_request_id is answered
// locally. The relay keeps no session: each call opens its own.
func NewRelay(servers []string, cfg RelayConfig) *sdk.Server {
	s, _ := newRelay(servers, cfg)
	return s
}

// newRelay is NewRelay, also returning the forwarder behind the server.
func newRelay(servers []string, cfg RelayConfig) (*sdk.Server, *relay) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = DefaultCallTimeout + 10*time.Second
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultRelayConnectTimeout
	}
	if cfg.DeadFor <= 0 {
		cfg.DeadFor = DefaultRelayDeadFor
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
	r.deadUntil = make([]atomic.Int64, len(r.endpoints))
	s := sdk.NewServer(&sdk.Implementation{Name: "restarea", Title: "rest.area (relay)", Version: cfg.Version},
		serverOptions(cfg.Logger))
	addGuide(s)
	for _, tool := range Tools() {
		if tool.Name == ToolNewRequestID {
			s.AddTool(tool, guard(tool.Name, newRequestID, cfg.AttemptTimeout, cfg.Logger, httpx.NewLogSampler(cfg.Logger, 0)))
			continue
		}
		s.AddTool(tool, r.forward)
	}
	return s, r
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
	// deadUntil holds, per endpoint, the Unix nanoseconds until which it
	// counts as unreachable (0: not known to be).
	deadUntil []atomic.Int64
}

// order returns the endpoint indexes in the order a call tries them:
// from the preferred one round, those not known to be dead first, then
// the dead ones (still tried, since the live ones may all have failed
// meanwhile).
func (r *relay) order() []int {
	n := len(r.endpoints)
	start := int(r.preferred.Load())
	now := time.Now().UnixNano()
	live := make([]int, 0, n)
	var dead []int
	for i := range n {
		idx := (start + i) % n
		if r.deadUntil[idx].Load() > now {
			dead = append(dead, idx)
			continue
		}
		live = append(live, idx)
	}
	return append(live, dead...)
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
	var failures []string
	for _, idx := range r.order() {
		res, err := r.call(ctx, r.endpoints[idx], name, args)
		if err == nil {
			r.answered(idx)
			return res, nil
		}
		if rpcErr := serverAnswer(err); rpcErr != nil {
			// The server answered, with a protocol error (e.g. invalid
			// params): that is its answer, not an outage.
			r.answered(idx)
			return nil, rpcErr
		}
		if ctx.Err() != nil {
			// The caller gave up; that says nothing about the server.
			failures = append(failures, fmt.Sprintf("%s: %v", r.endpoints[idx], ctx.Err()))
			break
		}
		r.deadUntil[idx].Store(time.Now().Add(r.cfg.DeadFor).UnixNano())
		r.cfg.Logger.Warn("mcp relay: server unreachable", "endpoint", r.endpoints[idx], "tool", name, "err", err,
			"skipped_for", r.cfg.DeadFor)
		failures = append(failures, fmt.Sprintf("%s: %v", r.endpoints[idx], err))
	}
	msg := "no rest.area server could be reached"
	if len(failures) > 0 {
		msg += " (" + strings.Join(failures, "; ") + ")"
	}
	msg += "; the outcome is unknown: retry with the same request_id and the same content"
	e := restarea.Errorf(restarea.CodeUnavailable, "%s", msg).WithRetryAfter(time.Second)
	return errorResult(e).callToolResult(), nil
}

// answered records that endpoint idx answered: calls start there, and it
// is no longer counted dead.
func (r *relay) answered(idx int) {
	r.preferred.Store(int64(idx))
	r.deadUntil[idx].Store(0)
}

// call makes one tool call on one endpoint in a fresh session. The
// handshake has ConnectTimeout; only a server that answered it gets the
// whole AttemptTimeout for the call. (The SDK detaches the session from
// the handshake's context, so the shorter deadline ends with it.)
func (r *relay) call(ctx context.Context, url, name string, args any) (*sdk.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.AttemptTimeout)
	defer cancel()
	cs, err := r.connect(ctx, url)
	if err != nil {
		return nil, err
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if ctx.Err() != nil {
		// Closing may wait for the SDK's best-effort cancellation notice
		// to a server that is not answering; the next server need not.
		go cs.Close()
	} else {
		cs.Close()
	}
	return res, err
}

// connect opens a session to url within ConnectTimeout. The SDK's own
// Connect can outlive its context by seconds when the server never
// answers (closing the failed session waits for a cancellation notice to
// be delivered), so the wait is bounded here, and a session that arrives
// late is closed in the background.
func (r *relay) connect(ctx context.Context, url string) (*sdk.ClientSession, error) {
	cctx, ccancel := context.WithTimeout(ctx, r.cfg.ConnectTimeout)
	defer ccancel()
	type result struct {
		cs  *sdk.ClientSession
		err error
	}
	done := make(chan result, 1)
	go func() {
		cs, err := r.client.Connect(cctx, &sdk.StreamableClientTransport{
			Endpoint:             url,
			HTTPClient:           r.cfg.HTTPClient,
			MaxRetries:           -1, // the next server is the retry
			DisableStandaloneSSE: true,
		}, nil)
		done <- result{cs, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-cctx.Done():
		// A connect that finished as the time ran out still counts: on a
		// busy machine both can be ready when this select runs, and it
		// picks either.
		select {
		case res = <-done:
		default:
			go func() {
				if res := <-done; res.cs != nil {
					res.cs.Close()
				}
			}()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("no answer within %s", r.cfg.ConnectTimeout)
		}
	}
	// Only the timeout (or the caller) ends cctx before this point, so a
	// failure while it is done is a server that did not answer in time.
	if res.err != nil && cctx.Err() != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("no answer within %s: %w", r.cfg.ConnectTimeout, res.err)
	}
	return res.cs, res.err
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
