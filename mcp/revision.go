package mcp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// revisionWithCache is the first MCP revision whose list results carry
// the caching fields ttlMs and cacheScope. Revisions are dates, so they
// compare as strings.
const revisionWithCache = "2026-07-28"

// cacheFields are the result members only revisionWithCache and later
// define. The SDK (v1.8.0) puts them on every list result, whatever the
// revision a request was made under.
var cacheFields = []string{"ttlMs", "cacheScope"}

// cachedMethods are the methods whose results carry cacheFields.
var cachedMethods = map[string]bool{
	"tools/list": true, "prompts/list": true, "resources/list": true,
	"resources/templates/list": true, "resources/read": true,
}

// legacyRevision reports whether a request made with this
// MCP-Protocol-Version header uses a revision before revisionWithCache.
// No header means 2025-03-26, as the Streamable HTTP transport says.
func legacyRevision(header string) bool {
	return header < revisionWithCache
}

// requestMethods returns the methods of the requests in a JSON-RPC body:
// one object or a batch. Bodies that do not decode give none.
func requestMethods(body []byte) []string {
	type msg struct {
		Method string `json:"method"`
	}
	body = bytes.TrimSpace(body)
	var out []string
	if len(body) > 0 && body[0] == '[' {
		var batch []msg
		if json.Unmarshal(body, &batch) == nil {
			for _, m := range batch {
				out = append(out, m.Method)
			}
		}
		return out
	}
	var m msg
	if json.Unmarshal(body, &m) == nil {
		out = append(out, m.Method)
	}
	return out
}

// acceptsJSONOnly reports whether Accept values take application/json but
// not text/event-stream, in the terms the SDK checks them.
func acceptsJSONOnly(values []string) bool {
	jsonOK, streamOK := false, false
	for _, v := range values {
		for _, tok := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(tok, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*", "*/*":
				streamOK = true
			}
		}
	}
	return jsonOK && !streamOK
}

// maxShapedBytes bounds the answer kept in memory to reshape; list results
// of this server are a few kilobytes.
const maxShapedBytes = 1 << 20

// legacyWriter holds a JSON answer back until the handler is done, to
// remove cacheFields from its results for a client of an older revision.
// An answer that is not JSON, not 200, or larger than maxShapedBytes
// passes through as the SDK wrote it.
type legacyWriter struct {
	http.ResponseWriter
	status  int
	buf     bytes.Buffer
	passing bool // the answer is being passed through as written
}

func (l *legacyWriter) WriteHeader(status int) {
	if l.status != 0 || l.passing {
		return
	}
	l.status = status
	if status != http.StatusOK || !strings.HasPrefix(l.Header().Get("Content-Type"), "application/json") {
		l.pass()
	}
}

func (l *legacyWriter) Write(b []byte) (int, error) {
	if l.status == 0 {
		l.WriteHeader(http.StatusOK)
	}
	if l.passing {
		return l.ResponseWriter.Write(b)
	}
	if l.buf.Len()+len(b) > maxShapedBytes {
		l.pass()
		return l.ResponseWriter.Write(b)
	}
	return l.buf.Write(b)
}

// Flush is a no-op while the answer is held: it is sent whole by finish.
func (l *legacyWriter) Flush() {
	if l.passing {
		if f, ok := l.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (l *legacyWriter) Unwrap() http.ResponseWriter { return l.ResponseWriter }

// pass stops holding: what was held is written, and the rest goes
// straight through.
func (l *legacyWriter) pass() {
	l.passing = true
	if l.status == 0 {
		l.status = http.StatusOK
	}
	l.ResponseWriter.WriteHeader(l.status)
	if l.buf.Len() > 0 {
		l.ResponseWriter.Write(l.buf.Bytes())
		l.buf.Reset()
	}
}

// finish writes the held answer without cacheFields.
func (l *legacyWriter) finish() {
	if l.passing || l.status == 0 {
		return
	}
	body := withoutCacheFields(l.buf.Bytes())
	l.Header().Set("Content-Length", strconv.Itoa(len(body)))
	l.ResponseWriter.WriteHeader(l.status)
	l.ResponseWriter.Write(body)
}

// withoutCacheFields removes cacheFields from the result of a JSON-RPC
// response, or of each response of a batch. Anything it cannot decode is
// returned unchanged.
func withoutCacheFields(body []byte) []byte {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return body
		}
		for i, m := range batch {
			batch[i] = stripResponse(m)
		}
		out, err := json.Marshal(batch)
		if err != nil {
			return body
		}
		return out
	}
	return stripResponse(trimmed)
}

func stripResponse(msg json.RawMessage) json.RawMessage {
	var resp map[string]json.RawMessage
	if json.Unmarshal(msg, &resp) != nil || resp["result"] == nil {
		return msg
	}
	var result map[string]json.RawMessage
	if json.Unmarshal(resp["result"], &result) != nil {
		return msg
	}
	changed := false
	for _, f := range cacheFields {
		if _, ok := result[f]; ok {
			delete(result, f)
			changed = true
		}
	}
	if !changed {
		return msg
	}
	r, err := json.Marshal(result)
	if err != nil {
		return msg
	}
	resp["result"] = r
	out, err := json.Marshal(resp)
	if err != nil {
		return msg
	}
	return out
}
