package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/restarea/restarea"
)

// MaxAnswerBytes caps every answer of the /mcp endpoint: one JSON-RPC
// response, and a batch's whole array of them. The largest entry costs
// about 267 KB in a tool answer (20,500 characters of text, each '<', '>'
// or '&' written as \u003c in the structured content and as \\u003c in
// its text copy: 13 bytes), so an answer holds at least 15 entries of the
// worst kind and 25 of 20,000 emoji (8 bytes each); the list and search
// tools return fewer entries than asked for, with a next_cursor, rather
// than pass it.
const MaxAnswerBytes = 4 << 20

// toolAnswerBytes is the part of MaxAnswerBytes a tool result may use: the
// rest is room for the JSON-RPC envelope and the request's id.
const toolAnswerBytes = MaxAnswerBytes - 16<<10

// pageOverhead bounds what a page costs in a tool answer besides its
// entries: the members of Result and of the page, and the cursor, in both
// copies.
const pageOverhead = 1 << 10

// answerCost returns the bytes that JSON value b (as encoding/json writes
// it: no raw '<', '>', '&', control or U+2028/U+2029 characters) costs in
// a tool answer, where it appears twice: as structuredContent, and as the
// text of a text content, a JSON string in which each '"' and '\' takes
// two bytes.
func answerCost(b []byte) int {
	return 2*len(b) + 2 + bytes.Count(b, []byte{'"'}) + bytes.Count(b, []byte{'\\'})
}

// fit returns how many of items, from the first, fit in one tool answer
// together with the rest of their page. It encodes one item at a time, so
// it never holds more than the largest item's JSON.
func fit[T any](items []T) int {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	total := pageOverhead
	for i := range items {
		buf.Reset()
		if enc.Encode(&items[i]) != nil {
			return i
		}
		// +2: the comma between items, in both copies.
		total += answerCost(bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})) + 2
		if total > toolAnswerBytes {
			return i
		}
	}
	return len(items)
}

// fitPage reads a page with get(limit) and, when its entries (items) do
// not fit in one tool answer, reads it again asking for as many as fit:
// the service's own next_cursor then continues after the last one
// returned. A board that changes between reads may need another try; after
// three the call is refused.
func fitPage[P, T any](limit int, get func(limit int) (P, error), items func(*P) []T) (P, error) {
	for range 3 {
		page, err := get(limit)
		if err != nil {
			return page, err
		}
		list := items(&page)
		n := fit(list)
		if n == len(list) {
			return page, nil
		}
		if n == 0 {
			break
		}
		limit = n
	}
	var zero P
	return zero, answerTooLarge()
}

// answerTooLarge is the tool error for a result that does not fit in
// MaxAnswerBytes.
func answerTooLarge() *restarea.Error {
	return restarea.Errorf(restarea.CodeInvalidRequest,
		"the answer would be larger than this server's %d-byte answer cap; ask for fewer entries (limit)", MaxAnswerBytes)
}

// capWriter passes one answer of the SDK through to w unless it is larger
// than max bytes; then it answers a JSON-RPC error instead, with the
// request's id, so a client gets a clear refusal rather than a cut JSON.
// The SDK writes a JSON answer in one Write, already encoded: the status
// is held until then, so the refusal can still replace it. An event
// stream (subscriptions/listen) is passed through unbounded: its messages
// are notifications, not answers.
type capWriter struct {
	http.ResponseWriter
	max     int
	legacy  bool // revision before 2026-07-28: JSON-RPC errors travel in a 200
	status  int  // held status, 0 until WriteHeader
	written int
	sent    bool // the held status has been written
	over    int  // size of the refused answer, 0 if none
	stream  bool
}

func (c *capWriter) WriteHeader(status int) {
	if c.status != 0 {
		return
	}
	c.status = status
	if strings.HasPrefix(c.Header().Get("Content-Type"), "text/event-stream") {
		c.stream = true
		c.send()
	}
}

func (c *capWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if c.over > 0 {
		c.over += len(b)
		return len(b), nil
	}
	if !c.stream && c.written+len(b) > c.max {
		if !c.sent {
			c.over = c.written + len(b)
			return len(b), nil
		}
		// Part of the answer is out: cutting it is all that is left.
		return 0, fmt.Errorf("mcp: answer exceeds %d bytes", c.max)
	}
	c.send()
	c.written += len(b)
	return c.ResponseWriter.Write(b)
}

func (c *capWriter) send() {
	if !c.sent {
		c.sent = true
		c.ResponseWriter.WriteHeader(c.status)
	}
}

// Flush sends what is held, unless the answer is being refused.
func (c *capWriter) Flush() {
	if c.over > 0 || c.status == 0 {
		return
	}
	c.send()
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (c *capWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// finish writes the held status of an answer without a body (202), or the
// refusal of one that was too large.
func (c *capWriter) finish(id json.RawMessage) {
	if c.over == 0 {
		if c.status != 0 {
			c.send()
		}
		return
	}
	h := c.Header()
	h.Del("Content-Length")
	status := http.StatusInternalServerError
	if c.legacy && len(id) > 0 {
		status = http.StatusOK
	}
	rpcError(c.ResponseWriter, status, codeInternalError, id,
		"the answer ("+strconv.Itoa(c.over)+" bytes) is larger than this server's "+strconv.Itoa(c.max)+"-byte answer cap")
}
