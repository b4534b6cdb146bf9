package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

// batchOf returns a JSON-RPC batch of n tools/call messages of tool with
// args, ids 1..n.
func batchOf(n int, tool string, args map[string]any) string {
	msgs := make([]string, n)
	for i := range msgs {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
			"params": map[string]any{"name": tool, "arguments": args}})
		msgs[i] = string(b)
	}
	return "[" + strings.Join(msgs, ",") + "]"
}

// postRaw posts body to url at revision rev ("" sends no header) and
// returns the status and the answer.
func postRaw(t *testing.T, url, rev, body string) (int, []byte) {
	t.Helper()
	headers := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
	if rev != "" {
		headers = append(headers, "MCP-Protocol-Version", rev)
	}
	r := testkit.Do(t, nil, http.MethodPost, url, body, headers...)
	return r.Status, []byte(r.Body)
}

// batchAnswer is one message of a batch's answer.
type batchAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		StructuredContent Result `json:"structuredContent"`
		IsError           bool   `json:"isError"`
		TTL               any    `json:"ttlMs"`
		Tools             []any  `json:"tools"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// batchAt posts body at rev and decodes the batch answer.
func batchAt(t *testing.T, url, rev, body string) []batchAnswer {
	t.Helper()
	status, b := postRaw(t, url, rev, body)
	return decodeBatch(t, status, b)
}

func decodeBatch(t *testing.T, status int, b []byte) []batchAnswer {
	t.Helper()
	var out []batchAnswer
	if status != http.StatusOK || json.Unmarshal(b, &out) != nil {
		t.Fatalf("want a 200 batch answer, got %d %.300s", status, b)
	}
	return out
}

// oneError decodes an answer that must be one JSON-RPC error object.
func oneError(t *testing.T, b []byte) batchAnswer {
	t.Helper()
	var a batchAnswer
	if json.Unmarshal(b, &a) != nil || a.Error == nil {
		t.Fatalf("want one JSON-RPC error, got %.300s", b)
	}
	return a
}

// From 2025-06-18 on a batch is refused whole, with a JSON-RPC error that
// says what to do, and nothing in it runs.
func TestBatchRefusedFromRevision20250618(t *testing.T) {
	fake := testkit.NewFakeService()
	url := serve(t, Config{Service: fake})
	for _, rev := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
		status, b := postRaw(t, url, rev, batchOf(2, ToolListThreads, nil))
		a := oneError(t, b)
		if status != http.StatusBadRequest || a.Error.Code != codeInvalidRequest || string(a.ID) != "null" ||
			!strings.Contains(a.Error.Message, "not part of MCP "+rev) || !strings.Contains(a.Error.Message, "POST of its own") {
			t.Errorf("%s: %d %s", rev, status, b)
		}
	}
	if n := len(fake.Calls()); n != 0 {
		t.Errorf("refused batches ran %d service calls", n)
	}
}

// Before 2025-06-18, a batch of more than MaxBatchMessages is refused
// whole and runs nothing; one of MaxBatchMessages is answered, in order.
func TestBatchSizeLimit(t *testing.T) {
	fake := testkit.NewFakeService()
	fake.AddQuestion("q", "body")
	url := serve(t, Config{Service: fake})
	for _, rev := range []string{"", "2024-11-05", "2025-03-26"} {
		fake.ResetCalls()
		status, b := postRaw(t, url, rev, batchOf(MaxBatchMessages+1, ToolListThreads, nil))
		a := oneError(t, b)
		if status != http.StatusBadRequest || a.Error.Code != codeInvalidRequest ||
			!strings.Contains(a.Error.Message, fmt.Sprintf("at most %d messages", MaxBatchMessages)) {
			t.Errorf("%q, %d messages: %d %s", rev, MaxBatchMessages+1, status, b)
		}
		if n := len(fake.Calls()); n != 0 {
			t.Errorf("%q: a refused batch ran %d service calls", rev, n)
		}
		answers := batchAt(t, url, rev, batchOf(MaxBatchMessages, ToolListThreads, nil))
		if len(answers) != MaxBatchMessages {
			t.Fatalf("%q: %d answers to %d calls", rev, len(answers), MaxBatchMessages)
		}
		for i, a := range answers {
			if string(a.ID) != fmt.Sprint(i+1) || a.Result == nil || a.Result.StructuredContent.HTTPStatus != http.StatusOK {
				t.Errorf("%q: answer %d: id %s, %+v", rev, i, a.ID, a.Error)
			}
		}
	}
}

// The calls of a batch run one after another: the service never sees two
// at once.
func TestBatchRunsSequentially(t *testing.T) {
	fake := testkit.NewFakeService()
	fake.AddQuestion("q", "body")
	var active, most, seen atomic.Int64
	fake.SetHook(func(context.Context, testkit.Call) error {
		n := active.Add(1)
		defer active.Add(-1)
		if n > most.Load() {
			most.Store(n)
		}
		seen.Add(1)
		// Give any other call of the batch every chance to start now.
		for range 1000 {
			runtime.Gosched()
		}
		return nil
	})
	url := serve(t, Config{Service: fake})
	answers := batchAt(t, url, "", batchOf(MaxBatchMessages, ToolListThreads, nil))
	if len(answers) != MaxBatchMessages || seen.Load() != MaxBatchMessages {
		t.Fatalf("%d answers, %d service calls; want %d", len(answers), seen.Load(), MaxBatchMessages)
	}
	if m := most.Load(); m != 1 {
		t.Errorf("%d calls of one batch ran at once", m)
	}
}

// emojiBoard adds n questions of restarea.MaxBody emoji to fake.
func emojiBoard(fake *testkit.FakeService, n int) {
	body := strings.Repeat("\U0001F600", restarea.MaxBody)
	for range n {
		fake.AddQuestion("emoji", body)
	}
}

// A batch whose answers pass the cap stops: the answer that did not fit is
// dropped with an error, the calls after it are not run, and the whole
// answer stays within MaxAnswerBytes.
func TestBatchStopsAtAnswerCap(t *testing.T) {
	fake := testkit.NewFakeService()
	emojiBoard(fake, 40)
	url := serve(t, Config{Service: fake})
	status, b := postRaw(t, url, "", batchOf(MaxBatchMessages, ToolListThreads, map[string]any{"limit": restarea.MaxPageLimit}))
	if len(b) > MaxAnswerBytes {
		t.Fatalf("batch answer of %d bytes, over the cap %d", len(b), MaxAnswerBytes)
	}
	answers := decodeBatch(t, status, b)
	if len(answers) != MaxBatchMessages {
		t.Fatalf("%d answers to %d calls", len(answers), MaxBatchMessages)
	}
	// The calls are answered in order until one does not fit: that one is
	// dropped with an error, and every call after it is not run.
	dropped := -1
	for i, a := range answers {
		switch {
		case dropped < 0 && a.Result != nil && a.Result.StructuredContent.HTTPStatus == http.StatusOK:
		case dropped < 0 && a.Error != nil && a.Error.Code == codeServerError && strings.Contains(a.Error.Message, "did not fit"):
			dropped = i
		case dropped >= 0 && a.Error != nil && a.Error.Code == codeServerError && strings.Contains(a.Error.Message, "not run") && string(a.ID) == fmt.Sprint(i+1):
		default:
			t.Errorf("call %d (dropped at %d): unexpected answer %+v", i+1, dropped+1, a.Error)
		}
	}
	if dropped < 1 {
		t.Fatalf("dropped at call %d: want some calls answered and one dropped on a board this large", dropped+1)
	}
	// The calls that ran each read the page twice at most (once to
	// measure, once at the limit that fits); the rest never reached the
	// service.
	if n := len(fake.Calls()); n > 2*(dropped+1) {
		t.Errorf("%d service calls for %d calls that ran", n, dropped+1)
	}
}

// A list page larger than the cap is answered with as many entries as
// fit and a cursor that continues after them; a result that cannot be cut
// gets a clear tool error, never a cut JSON.
func TestAnswerCap(t *testing.T) {
	fake := testkit.NewFakeService()
	emojiBoard(fake, 40)
	url := serve(t, Config{Service: fake})
	cs := connect(t, url, "", nil)
	got := 0
	cursor := ""
	for pages := 0; ; pages++ {
		args := map[string]any{"limit": restarea.MaxPageLimit}
		if cursor != "" {
			args["cursor"] = cursor
		}
		r := call(t, cs, ToolListThreads, args)
		threads, _ := r.Data["threads"].([]any)
		if r.HTTPStatus != http.StatusOK || len(threads) == 0 {
			t.Fatalf("page %d: %d, %d threads", pages, r.HTTPStatus, len(threads))
		}
		if pages == 0 && len(threads) >= 40 {
			t.Fatalf("first page: %d threads of %d KB in one answer", len(threads), restarea.MaxBody*4/1000)
		}
		if size := answerCost([]byte(r.Text)); size > MaxAnswerBytes {
			t.Errorf("page %d: answer of about %d bytes, over %d", pages, size, MaxAnswerBytes)
		}
		got += len(threads)
		next, _ := r.Data["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if got != 40 {
		t.Errorf("paging saw %d threads, want 40", got)
	}

	huge := fake.AddQuestion("huge", "x")
	huge.Body = strings.Repeat("<", MaxAnswerBytes/8)
	fake.Stub("GetThread", huge)
	r := call(t, cs, ToolGetThread, map[string]any{"id": huge.ID})
	if r.HTTPStatus != http.StatusBadRequest || !r.IsError || r.Error == nil ||
		!strings.Contains(r.Error.Message, fmt.Sprintf("%d-byte answer cap", MaxAnswerBytes)) {
		t.Errorf("oversized result: %d %+v", r.HTTPStatus, r.Error)
	}
}

// answerCost counts what a result costs on the wire: the answer the SDK
// writes for the worst characters is within a small envelope of it.
func TestAnswerCostMatchesTheWire(t *testing.T) {
	fake := testkit.NewFakeService()
	worst := strings.Repeat("<>&\"\\\U0001F600\u2028\n\té", 1000)
	q := fake.AddQuestion(worst[:200], worst)
	url := serve(t, Config{Service: fake})
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":{"id":%q}}}`, ToolGetThread, q.ID)
	status, wire := postRaw(t, url, "", msg)
	e, _ := fake.GetThread(context.Background(), q.ID, restarea.ReadOptions{})
	b, _ := json.Marshal(ok(http.StatusOK, e))
	cost := answerCost(b)
	if status != http.StatusOK || len(wire) < cost || len(wire) > cost+MaxAnswerBytes-toolAnswerBytes {
		t.Errorf("answer of %d bytes (%d); answerCost says %d, envelope room %d", len(wire), status, cost, MaxAnswerBytes-toolAnswerBytes)
	}
}

// Each revision before 2025-06-18 keeps its own shape inside a batch: list
// results without the 2026-07-28 fields, -32601 for an unknown method with
// its id, no answer to a notification, and 202 for a batch of
// notifications only.
func TestBatchShapes(t *testing.T) {
	url := serve(t, Config{Service: testkit.NewFakeService()})
	for _, rev := range []string{"", "2024-11-05", "2025-03-26"} {
		body := `[{"jsonrpc":"2.0","id":"a","method":"tools/list"},` +
			`{"jsonrpc":"2.0","method":"notifications/initialized"},` +
			`{"jsonrpc":"2.0","id":"b","method":"no/such"},` +
			`{"jsonrpc":"1.0","id":"c","method":"tools/list"}]`
		answers := batchAt(t, url, rev, body)
		if len(answers) != 3 {
			t.Fatalf("%q: %d answers, want 3 (none for the notification)", rev, len(answers))
		}
		if a := answers[0]; string(a.ID) != `"a"` || a.Result == nil || len(a.Result.Tools) != len(Tools()) || a.Result.TTL != nil {
			t.Errorf("%q: tools/list in a batch: %s %+v", rev, a.ID, a.Error)
		}
		if a := answers[1]; string(a.ID) != `"b"` || a.Error == nil || a.Error.Code != codeMethodNotFound {
			t.Errorf("%q: unknown method in a batch: %s %+v", rev, a.ID, a.Error)
		}
		if a := answers[2]; string(a.ID) != `"c"` || a.Error == nil || a.Error.Code != codeInvalidRequest {
			t.Errorf("%q: wrong jsonrpc version in a batch: %s %+v", rev, a.ID, a.Error)
		}
		status, b := postRaw(t, url, rev, `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`)
		if status != http.StatusAccepted || len(b) != 0 {
			t.Errorf("%q: batch of a notification: %d %q", rev, status, b)
		}
	}
}
