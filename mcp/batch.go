package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// MaxBatchMessages is the most messages a JSON-RPC batch may hold. Clients
// of 2024-11-05 and 2025-03-26 batch a notification with a request, or a
// few tool calls an agent made at once; eight covers those, while a
// batch's cost (its calls run one after another, under one CallTimeout
// and one MaxAnswerBytes) stays that of a few calls.
const MaxBatchMessages = 8

// revisionWithoutBatches is the first MCP revision that removed JSON-RPC
// batching.
const revisionWithoutBatches = "2025-06-18"

// defaultRevision is the revision of a request without the
// MCP-Protocol-Version header, by the Streamable HTTP transport's rule.
const defaultRevision = "2025-03-26"

// isBatch reports whether body is a JSON-RPC batch (an array).
func isBatch(body []byte) bool {
	b := bytes.TrimSpace(body)
	return len(b) > 0 && b[0] == '['
}

// serveBatch answers a JSON-RPC batch. From revisionWithoutBatches on, and
// above MaxBatchMessages messages, the whole batch is refused and nothing
// runs. Otherwise each message is answered as if it had come alone (the
// same checks, the same SDK path), one after another, never at once, and
// the answers are gathered into one array of at most MaxAnswerBytes: each
// message may use only the room the answers before it left, less what the
// refusals of those after it would take. A message whose answer does not
// fit, and every message after it, is answered with a JSON-RPC error
// saying so (so are those left when the batch's CallTimeout runs out);
// messages without an id (notifications) are never answered, as JSON-RPC
// says.
func (h *handler) serveBatch(w http.ResponseWriter, r *http.Request, body []byte) {
	rev := r.Header.Get(protocolVersionHeader)
	if rev == "" {
		rev = defaultRevision
	}
	if rev >= revisionWithoutBatches {
		rpcError(w, http.StatusBadRequest, codeInvalidRequest, nil, fmt.Sprintf(
			"JSON-RPC batches are not part of MCP %s (removed in %s): send each request in a POST of its own", rev, revisionWithoutBatches))
		return
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(body, &batch); err != nil {
		rpcError(w, http.StatusBadRequest, codeInvalidRequest, nil, "the batch is not an array of JSON-RPC messages")
		return
	}
	if len(batch) > MaxBatchMessages {
		rpcError(w, http.StatusBadRequest, codeInvalidRequest, nil, fmt.Sprintf(
			"a batch may hold at most %d messages, this one has %d; none was run: send at most %d per batch, or each request on its own",
			MaxBatchMessages, len(batch), MaxBatchMessages))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.CallTimeout)
	defer cancel()

	ids := make([]json.RawMessage, len(batch))
	reserve := make([]int, len(batch)+1) // reserve[i]: what refusing messages i.. would take
	for i := len(batch) - 1; i >= 0; i-- {
		ids[i] = messageID(batch[i])
		reserve[i] = reserve[i+1]
		if ids[i] != nil {
			reserve[i] += len(rpcErrorJSON(ids[i], codeServerError, notRun())) + 1
		}
	}

	out := bytes.NewBuffer(make([]byte, 0, 4096))
	out.WriteByte('[')
	add := func(msg []byte) {
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		out.Write(msg)
	}
	var stopped string // why the remaining messages are not run
	for i, msg := range batch {
		if stopped == "" && ctx.Err() != nil {
			stopped = fmt.Sprintf("not run: the batch's time budget (%s) ran out; send this request again on its own", h.cfg.CallTimeout)
		}
		if stopped != "" {
			if ids[i] != nil {
				add(rpcErrorJSON(ids[i], codeServerError, stopped))
			}
			continue
		}
		// 2: the closing bracket and this answer's comma.
		room := MaxAnswerBytes - out.Len() - 2 - reserve[i+1]
		answer, fits := h.serveOneOfBatch(ctx, r, msg, room)
		if !fits {
			stopped = notRun()
			if ids[i] != nil {
				add(rpcErrorJSON(ids[i], codeServerError, fmt.Sprintf(
					"the answer to this request did not fit in the batch's %d-byte answer cap and was dropped "+
						"(a post_entry may have been stored: retrying it with the same request_id never stores it twice); "+
						"send this request again on its own", MaxAnswerBytes)))
			}
			continue
		}
		if len(answer) > 0 {
			add(answer)
		}
	}
	if out.Len() == 1 {
		// Only notifications: JSON-RPC answers nothing, the transport 202.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	out.WriteByte(']')
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Cache-Control", "no-cache, no-transform")
	hdr.Set("Content-Length", strconv.Itoa(out.Len()))
	w.WriteHeader(http.StatusOK)
	w.Write(out.Bytes())
}

// codeServerError is the JSON-RPC code (from the range reserved for
// implementations) of a batch message that was not answered.
const codeServerError = -32000

// notRun is the error of a message left unrun because the batch's answer
// cap was reached.
func notRun() string {
	return fmt.Sprintf("not run: this batch's answers reached the %d-byte answer cap; send this request again on its own", MaxAnswerBytes)
}

// serveOneOfBatch answers one message of a batch through the path a lone
// request takes, capturing the answer, which may be at most room bytes.
// fits is false when the answer was larger; it is then discarded.
func (h *handler) serveOneOfBatch(ctx context.Context, r *http.Request, msg json.RawMessage, room int) (answer []byte, fits bool) {
	if isBatch(msg) {
		answer = rpcErrorJSON(nil, codeInvalidRequest, "a batch may not contain a batch")
		return answer, len(answer) <= room
	}
	id, code, text := checkEnvelope(msg)
	if code != 0 {
		answer = rpcErrorJSON(id, code, text)
		return answer, len(answer) <= room
	}
	sub := r.Clone(ctx)
	sub.Body = io.NopCloser(bytes.NewReader(msg))
	sub.ContentLength = int64(len(msg))
	cw := &captureWriter{header: http.Header{}, max: max(room, 0)}
	h.serve(cw, sub, requestMethods(msg), id)
	if cw.over {
		return nil, false
	}
	return bytes.TrimSpace(cw.buf.Bytes()), true
}

// messageID returns the id of a batch message, if it has one usable in an
// answer (a string or a number); nil otherwise.
func messageID(msg json.RawMessage) json.RawMessage {
	if isBatch(msg) {
		return json.RawMessage("null")
	}
	id, _, _ := checkEnvelope(msg)
	return id
}

// rpcErrorJSON encodes one JSON-RPC error response.
func rpcErrorJSON(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": code, "message": msg},
	})
	return b
}

// captureWriter holds the answer to one message of a batch, up to max
// bytes; beyond, it keeps nothing and reports over.
type captureWriter struct {
	header http.Header
	status int
	buf    bytes.Buffer
	max    int
	over   bool
}

func (c *captureWriter) Header() http.Header { return c.header }

func (c *captureWriter) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if c.over || c.buf.Len()+len(b) > c.max {
		c.over = true
		c.buf = bytes.Buffer{}
		return len(b), nil
	}
	return c.buf.Write(b)
}

// Flush is a no-op: the answer is sent with the batch's.
func (c *captureWriter) Flush() {}
