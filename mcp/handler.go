package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
)

// NewHandler returns the /mcp endpoint of a node: Streamable HTTP in
// stateless mode (no session affinity, so consecutive calls may reach
// different nodes) with plain JSON answers. Before the SDK sees a request
// it enforces, in order: the Origin rule of httpx.CrossSite (a present
// Origin must name the request's host or be listed in cfg.AllowedOrigins,
// and "Sec-Fetch-Site: cross-site" needs an allowed Origin, else 403); the
// Host rule against DNS rebinding (httpx.ForeignHost, 403); a body of at most
// cfg.MaxBodyBytes (413) read within cfg.CallTimeout (408). It also
// smooths three edges of the SDK for every revision: a client that
// accepts only application/json is answered (in JSON) instead of refused;
// an unknown method is -32601 Method not found, not -32600; and results
// under revisions before 2026-07-28 lose the fields only that revision
// defines (ttlMs, cacheScope). The client
// address for post_entry comes from the peer under the trusted-proxy rule.
func NewHandler(cfg Config) http.Handler {
	cfg = cfg.withDefaults()
	srv := NewServer(cfg.Service, cfg)
	refusals := httpx.NewLogSampler(cfg.Logger, 0)
	streamable := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{
			Stateless:    true,
			JSONResponse: true,
			// What the SDK logs, a client causes (a request it cannot
			// connect, a stream it drops): sampled.
			Logger:              refusals.Logger(),
			MaxRequestBodyBytes: cfg.MaxBodyBytes,
			// httpx.ForeignHost does this check, because the SDK's
			// version also refuses a trusted reverse proxy on loopback.
			DisableLocalhostProtection: true,
		})
	return &handler{cfg: cfg, next: httpx.SourceMiddleware(cfg.TrustedProxies, cfg.IPv6SourceBits, streamable),
		refusals: refusals}
}

type handler struct {
	cfg  Config
	next http.Handler
	// refusals logs refused requests, sampled: anyone can send them.
	refusals *httpx.LogSampler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if reason, refused := httpx.CrossSite(r, h.cfg.AllowedOrigins); refused {
		h.refusals.Log(r.Context(), slog.LevelInfo, "mcp: cross-site request refused", "origin", r.Header.Get("Origin"), "host", r.Host)
		rpcError(w, http.StatusForbidden, codeInvalidRequest, nil, "forbidden: "+reason)
		return
	}
	if reason, refused := httpx.ForeignHost(r, h.cfg.AllowedOrigins, h.cfg.TrustedProxies); refused {
		h.refusals.Log(r.Context(), slog.LevelInfo, "mcp: request for a foreign Host refused", "host", r.Host)
		rpcError(w, http.StatusForbidden, codeInvalidRequest, nil, "forbidden: "+reason)
		return
	}
	var id json.RawMessage
	var methods []string
	if r.Body != nil && r.Method == http.MethodPost {
		body, status, err := readBody(w, r, h.cfg.MaxBodyBytes, h.cfg.CallTimeout)
		if err != nil {
			rpcError(w, status, codeInvalidRequest, nil, err.Error())
			return
		}
		var code int
		var msg string
		if id, code, msg = checkEnvelope(body); code != 0 {
			rpcError(w, http.StatusBadRequest, code, id, msg)
			return
		}
		if isBatch(body) {
			h.serveBatch(w, r, body)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		methods = requestMethods(body)
	}
	cw := &capWriter{ResponseWriter: w, max: MaxAnswerBytes, legacy: legacyRevision(r.Header.Get(protocolVersionHeader))}
	h.serve(cw, r, methods, id)
	cw.finish(id)
}

// serve answers one JSON-RPC message (or a GET or DELETE) through the SDK,
// smoothing its edges for the request's revision; methods are the
// message's, id its id. The body has been read and checked already.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, methods []string, id json.RawMessage) {
	// A client that accepts only JSON (curl-style) gets JSON, which is
	// all this endpoint answers (JSONResponse); the SDK insists on both
	// types. subscriptions/listen, a stream by nature, is left to the
	// SDK's refusal.
	if methods != nil && acceptsJSONOnly(r.Header.Values("Accept")) && !slices.Contains(methods, "subscriptions/listen") {
		r.Header.Set("Accept", "application/json, text/event-stream")
	}
	ew := &errorWriter{ResponseWriter: w, legacy: legacyRevision(r.Header.Get(protocolVersionHeader))}
	var out http.ResponseWriter = ew
	var lw *legacyWriter
	if ew.legacy && slices.ContainsFunc(methods, func(m string) bool { return cachedMethods[m] }) {
		lw = &legacyWriter{ResponseWriter: ew}
		out = lw
	}
	h.next.ServeHTTP(out, r)
	if lw != nil {
		lw.finish()
	}
	ew.finish(id)
}

// protocolVersionHeader names the MCP revision of a request after the
// handshake.
const protocolVersionHeader = "MCP-Protocol-Version"

// readBody reads the whole request body within timeout, so that a slow
// sender cannot hold a handler. On success it lifts the read deadline
// again, since a deadline still pending while the call runs would cancel
// the request's context when it expires. On failure the connection is
// closed after the answer, rather than drained of a body that may never
// come.
func readBody(w http.ResponseWriter, r *http.Request, max int64, timeout time.Duration) ([]byte, int, error) {
	rc := http.NewResponseController(w)
	// Not every ResponseWriter supports deadlines (e.g. in tests); the
	// server's own ReadTimeout still applies then.
	deadline := rc.SetReadDeadline(time.Now().Add(timeout)) == nil
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err == nil {
		if deadline {
			rc.SetReadDeadline(time.Time{})
		}
		return body, 0, nil
	}
	w.Header().Set("Connection", "close")
	var tooBig *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooBig):
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("request body exceeds %d bytes", max)
	case errors.As(err, &netErr) && netErr.Timeout():
		return nil, http.StatusRequestTimeout, fmt.Errorf("request body not received within %s", timeout)
	default:
		return nil, http.StatusBadRequest, fmt.Errorf("reading request body: %v", err)
	}
}

// JSON-RPC 2.0 error codes used for answers made before the SDK runs.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInternalError  = -32603
)

// checkEnvelope rejects a body that is not a JSON-RPC message at all, with
// the JSON-RPC error that says so: not JSON (parse error), empty, or
// neither an object with "jsonrpc": "2.0" nor a non-empty batch array.
// Everything else is left to the SDK. It returns the request's id, if it
// has a usable one, for errors answered later.
func checkEnvelope(body []byte) (id json.RawMessage, code int, msg string) {
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) == 0:
		return nil, codeInvalidRequest, "empty body: a JSON-RPC 2.0 request object is required"
	case !json.Valid(trimmed):
		return nil, codeParseError, "parse error: the body is not valid JSON"
	case trimmed[0] == '[':
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil || len(batch) == 0 {
			return nil, codeInvalidRequest, "an empty batch is not a JSON-RPC request"
		}
		return nil, 0, ""
	case trimmed[0] != '{':
		return nil, codeInvalidRequest, "a JSON-RPC 2.0 request must be a JSON object"
	}
	var env struct {
		Version any             `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
	}
	if json.Unmarshal(trimmed, &env) == nil && len(env.ID) > 0 && (env.ID[0] == '"' || env.ID[0] == '-' || env.ID[0] >= '0' && env.ID[0] <= '9') {
		id = env.ID
	}
	if env.Version != "2.0" {
		return id, codeInvalidRequest, `a JSON-RPC request needs "jsonrpc": "2.0"`
	}
	return id, 0, ""
}

// rpcError answers with a JSON-RPC error object, which MCP clients surface
// to their caller, under the given HTTP status. id may be nil (null).
func rpcError(w http.ResponseWriter, status, code int, id json.RawMessage, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	httpx.WriteJSON(w, status, map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": code, "message": msg},
	})
}

// WriteRefusal answers a request to /mcp refused before it was read (the
// public port's bound on expensive requests): the HTTP status of err's
// code with its Retry-After, and a JSON-RPC error without an id, since the
// request's id was never read.
func WriteRefusal(w http.ResponseWriter, err error) {
	if secs := restarea.RetryAfterSeconds(err); secs > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	rpcError(w, httpx.Status(restarea.ErrorCode(err)), codeServerError, nil, restarea.ErrorMessage(err))
}
