package mcp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// notHandled starts the SDK's text for a method it does not handle
// (jsonrpc2.ErrNotHandled, internal to the SDK).
const notHandled = "JSON RPC not handled"

// maxErrorText bounds the plain-text error body kept for rewriting.
const maxErrorText = 4 << 10

// errorWriter turns the SDK's plain-text HTTP errors (unsupported method,
// missing params, wrong Accept header...) into JSON-RPC error objects, so
// that every refusal from /mcp is JSON an MCP client can surface. Any
// other answer passes through untouched.
type errorWriter struct {
	http.ResponseWriter
	// legacy is set for requests of revisions before 2026-07-28, whose
	// JSON-RPC errors travel in a 200 answer.
	legacy  bool
	status  int // non-zero once an error is being captured
	text    bytes.Buffer
	written bool
}

func (e *errorWriter) WriteHeader(status int) {
	if e.written || e.status != 0 {
		return
	}
	ct := e.Header().Get("Content-Type")
	if status >= http.StatusBadRequest && !strings.HasPrefix(ct, "application/json") {
		e.status = status
		return
	}
	e.written = true
	e.ResponseWriter.WriteHeader(status)
}

func (e *errorWriter) Write(b []byte) (int, error) {
	if e.status != 0 {
		if room := maxErrorText - e.text.Len(); room > 0 {
			e.text.Write(b[:min(len(b), room)])
		}
		return len(b), nil
	}
	e.written = true
	return e.ResponseWriter.Write(b)
}

// Flush supports streamed answers when no error is being captured.
func (e *errorWriter) Flush() {
	if e.status != 0 {
		return
	}
	if f, ok := e.ResponseWriter.(http.Flusher); ok {
		e.written = true
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (e *errorWriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }

// finish writes the captured error, if any, as JSON-RPC with the request's
// id.
func (e *errorWriter) finish(id json.RawMessage) {
	if e.status == 0 {
		return
	}
	h := e.Header()
	h.Del("Content-Type")
	h.Del("X-Content-Type-Options")
	code := codeInvalidRequest
	if e.status >= http.StatusInternalServerError {
		code = codeInternalError
	}
	msg := strings.TrimSpace(e.text.String())
	if msg == "" {
		msg = http.StatusText(e.status)
	}
	status := e.status
	if rest, ok := strings.CutPrefix(msg, notHandled); ok && e.status == http.StatusBadRequest {
		// The SDK refuses a method it does not know before any session
		// sees it, in words of its own; JSON-RPC 2.0 calls that -32601,
		// and clients probe optional methods (resources/list,
		// prompts/list) by that code. Under the older revisions a
		// JSON-RPC error is an answer like any other (200), which is
		// how clients there read its code; 2026-07-28 answers 404 itself.
		code, msg = codeMethodNotFound, "Method not found"+rest
		if e.legacy && len(id) > 0 {
			status = http.StatusOK
		}
	}
	rpcError(e.ResponseWriter, status, code, id, msg)
}
