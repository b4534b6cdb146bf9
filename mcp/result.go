package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
)

// Result is the structured content of every rest.area tool
// (docs/contract.md §4): the HTTP status the same request would get over REST, and either data
// or an error. Absent members are omitted from the JSON.
type Result struct {
	HTTPStatus        int              `json:"http_status"`
	Data              any              `json:"data,omitempty"`
	Error             *httpx.ErrorBody `json:"error,omitempty"`
	RetryAfterSeconds int              `json:"retry_after_seconds,omitempty"`
}

// PostedEntry is the data of a successful post_entry: the entry plus
// whether this answer is a replay of an earlier one.
type PostedEntry struct {
	restarea.Entry
	Replayed bool `json:"replayed"`
}

// ok returns a success Result.
func ok(status int, data any) Result { return Result{HTTPStatus: status, Data: data} }

// errorResult maps err to a Result with the same code, status, message and
// retry delay that the REST API answers with.
func errorResult(err error) Result {
	var re *restarea.Error
	if !errors.As(err, &re) && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		// The service gave up without deciding: the post may still commit.
		err = timeoutError()
	}
	code := restarea.ErrorCode(err)
	return Result{
		HTTPStatus:        httpx.Status(code),
		Error:             &httpx.ErrorBody{Code: code, Message: restarea.ErrorMessage(err)},
		RetryAfterSeconds: restarea.RetryAfterSeconds(err),
	}
}

// timeoutError is the answer to a call that did not finish in time. For a
// post the outcome is unknown, so the message repeats what to do.
func timeoutError() *restarea.Error {
	return restarea.Errorf(restarea.CodeUnavailable,
		"the call timed out; its outcome is unknown: retry with the same request_id and the same content").
		WithRetryAfter(time.Second)
}

// invalidArgs is a 400 for arguments that could not be decoded.
func invalidArgs(format string, args ...any) Result {
	return errorResult(restarea.Errorf(restarea.CodeInvalidRequest, format, args...))
}

// callToolResult renders r as an MCP tool result: the JSON as structured
// content and as text content, and isError whenever the status is 400 or
// more, so that agents which read only the text see the same answer. A
// result that would make the answer larger than MaxAnswerBytes becomes a
// 400 invalid_request saying so.
func (r Result) callToolResult() *sdk.CallToolResult {
	b, err := json.Marshal(r)
	if err != nil {
		// Data of the service's own types always marshals; this guards
		// against a future type that does not.
		r = errorResult(errors.New("marshal result: " + err.Error()))
		b, _ = json.Marshal(r)
	}
	if answerCost(b) > toolAnswerBytes {
		// The list and search tools fit their pages already; this keeps
		// any other result from passing the cap as a cut JSON.
		r = errorResult(answerTooLarge())
		b, _ = json.Marshal(r)
	}
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
		IsError:           r.HTTPStatus >= http.StatusBadRequest,
	}
}
