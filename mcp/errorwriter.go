package mcp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// maxErrorText bounds the plain-text error body kept for rewriting.
const maxErrorText = 4 << 10

// errorWriter turns the SDK's plain-text HTTP errors (unsupported method,
// missing params, wrong Accept header...) into JSON-RPC error objects, so
// that every refusal from /mcp is JSON an MCP client can surface. Any
// other answer passes through untouched.
type errorWriter struct {
	http.ResponseWriter
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
	rpcError(e.ResponseWriter, e.status, code, id, msg)
}
