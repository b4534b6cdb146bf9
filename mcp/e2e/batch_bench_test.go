package e2e_test

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/mcp"
)

// bigBoard posts n questions whose bodies are restarea.MaxBody emoji, the
// board of issue 26's MCP finding, and returns the node's base URL.
func bigBoard(tb testing.TB, n int) string {
	tb.Helper()
	node := testnode.Start(tb)
	body := strings.Repeat("\U0001F600", restarea.MaxBody)
	for range n {
		testnode.Post(tb, node, restarea.PostRequest{RequestID: uuid.NewString(), Type: restarea.TypeQuestion,
			Title: "emoji", Body: body, Actor: restarea.Actor{Name: "bench"}, SubmissionMode: restarea.ModeAutonomous})
	}
	return node.URL()
}

// listBatch is the finding's request: calls list_threads calls of limit
// restarea.MaxPageLimit in one JSON-RPC batch.
func listBatch(calls int) string {
	msgs := make([]string, calls)
	for i := range msgs {
		msgs[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"limit":%d}}}`,
			i+1, mcp.ToolListThreads, restarea.MaxPageLimit)
	}
	return "[" + strings.Join(msgs, ",") + "]"
}

// postBatch sends body to /mcp without MCP-Protocol-Version (so 2025-03-26,
// where batches exist) and returns the status and the answer's size,
// reading the answer as it comes instead of holding it.
func postBatch(tb testing.TB, url, body string) (int, int64) {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Logf("no answer: %v", err)
		return 0, 0
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		// The server gave up writing (its write timeout): the bytes that
		// arrived are still the figure.
		tb.Logf("answer cut after %d bytes: %v", n, err)
	}
	return resp.StatusCode, n
}

// BenchmarkListThreadsBatch sends issue 26's MCP attack to a real node in
// this process (200 questions of 20,000 emoji; a batch of 20 list_threads
// calls of limit 200, without the protocol header, then the same as 8
// calls, the most a batch may hold) and reports, per request, the answer's
// bytes, the bytes allocated (TotalAlloc) and the growth of the heap in use
// at the end of the request (HeapInuse, after a GC before it).
//
//	go test -run '^$' -bench ListThreadsBatch -benchtime 3x ./mcp/e2e/
func BenchmarkListThreadsBatch(b *testing.B) {
	base := bigBoard(b, 200)
	for _, calls := range []int{20, 8} {
		body := listBatch(calls)
		b.Run(fmt.Sprintf("calls=%d", calls), func(b *testing.B) {
			var answer, alloc, peak int64
			var status int
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				done, high := heapHigh()
				var n int64
				status, n = postBatch(b, base+"/mcp", body)
				runtime.ReadMemStats(&after)
				answer += n
				alloc += int64(after.TotalAlloc - before.TotalAlloc)
				peak = max(peak, int64(max(<-finish(done, high), after.HeapInuse))-int64(before.HeapInuse))
			}
			b.ReportMetric(float64(len(body)), "request-B")
			b.ReportMetric(float64(status), "status")
			b.ReportMetric(float64(answer)/float64(b.N)/(1<<20), "answer-MiB/op")
			b.ReportMetric(float64(alloc)/float64(b.N)/(1<<20), "alloc-MiB/op")
			b.ReportMetric(float64(peak)/(1<<20), "heap-growth-MiB")
		})
	}
}

// heapHigh samples HeapInuse every 5 ms until done is closed, then sends
// the highest value seen on the returned channel: the peak of a request, to within a
// sample.
func heapHigh() (chan struct{}, chan uint64) {
	done, high := make(chan struct{}), make(chan uint64, 1)
	go func() {
		var top uint64
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			top = max(top, m.HeapInuse)
			select {
			case <-done:
				high <- top
				return
			case <-tick.C:
			}
		}
	}()
	return done, high
}

func finish(done chan struct{}, high chan uint64) chan uint64 {
	close(done)
	return high
}

// answerOf is a helper for tests that want the whole answer.
func answerOf(tb testing.TB, url, rev, body string) (int, []byte) {
	tb.Helper()
	headers := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
	if rev != "" {
		headers = append(headers, "MCP-Protocol-Version", rev)
	}
	r := testkit.Do(tb, nil, http.MethodPost, url, body, headers...)
	return r.Status, []byte(r.Body)
}
