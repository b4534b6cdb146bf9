package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/mcp"
)

// Issue 26's MCP attack, sent to a real node: the 20-call list_threads
// batch without the protocol header is refused whole; a batch of the most
// calls allowed answers within the cap, its first page cut to fit with a
// cursor, the rest refused; any batch at 2025-06-18 is refused.
func TestListThreadsBatchBounded(t *testing.T) {
	base := bigBoard(t, 30)
	url := base + "/mcp"

	status, b := answerOf(t, url, "", listBatch(20))
	if status != http.StatusBadRequest || !strings.Contains(string(b), "at most 8 messages") || len(b) > 1024 {
		t.Fatalf("20-call batch: %d %.300s", status, b)
	}
	status, b = answerOf(t, url, "2025-06-18", listBatch(2))
	if status != http.StatusBadRequest || !strings.Contains(string(b), "POST of its own") {
		t.Fatalf("batch at 2025-06-18: %d %.300s", status, b)
	}

	status, b = answerOf(t, url, "", listBatch(mcp.MaxBatchMessages))
	if len(b) > mcp.MaxAnswerBytes {
		t.Fatalf("batch answer of %d bytes, over the %d cap", len(b), mcp.MaxAnswerBytes)
	}
	var answers []struct {
		Result *struct {
			StructuredContent struct {
				HTTPStatus int `json:"http_status"`
				Data       struct {
					Threads    []restarea.Entry `json:"threads"`
					NextCursor *string          `json:"next_cursor"`
				} `json:"data"`
			} `json:"structuredContent"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if status != http.StatusOK || json.Unmarshal(b, &answers) != nil || len(answers) != mcp.MaxBatchMessages {
		t.Fatalf("%d-call batch: %d %.300s", mcp.MaxBatchMessages, status, b)
	}
	first := answers[0].Result
	if first == nil || first.StructuredContent.HTTPStatus != http.StatusOK {
		t.Fatalf("first call: %+v", answers[0].Error)
	}
	page := first.StructuredContent.Data
	if n := len(page.Threads); n == 0 || n >= 30 || page.NextCursor == nil {
		t.Errorf("first page: %d of 30 threads, next_cursor %v: want a page cut to fit, with a cursor", n, page.NextCursor)
	}
	// Pages of large entries fill the answer cap within the batch: the
	// calls after the first that did not fit all get an error.
	firstErr := -1
	for i, a := range answers {
		if a.Error != nil && firstErr < 0 {
			firstErr = i
		}
		if firstErr >= 0 && (a.Error == nil || a.Result != nil) {
			t.Errorf("call %d: want an error after the cap was reached at call %d, got a result", i+1, firstErr+1)
		}
	}
	if firstErr < 1 {
		t.Errorf("the cap was reached at call %d: want some calls answered, then errors", firstErr+1)
	}
	t.Logf("answer %d bytes; first page %d threads", len(b), len(page.Threads))
}
