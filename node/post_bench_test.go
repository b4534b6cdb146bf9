package node_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// benchPost sends a question with a 512-byte body over REST and returns
// the status.
func benchPost(b *testing.B, c *http.Client, url string, req restarea.PostRequest) int {
	body, _ := json.Marshal(req)
	resp, err := c.Post(url+"/api/v1/entries", "application/json", bytes.NewReader(body))
	if err != nil {
		b.Error(err)
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func benchQuestion() restarea.PostRequest {
	q := testkit.Question("How do retries work?")
	q.Body = strings.Repeat("b", 512)
	return q
}

// runParallel issues b.N operations from g goroutines.
func runParallel(b *testing.B, g int, op func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				op(i)
			}
		}()
	}
	wg.Wait()
}

// BenchmarkRESTPost posts new questions over REST to a real single node
// (raft, raft-boltdb, bbolt on disk) from 1 and 64 goroutines: with group
// commit, 64 concurrent posts share log appends and state transactions.
func BenchmarkRESTPost(b *testing.B) {
	for _, g := range []int{1, 64} {
		b.Run(fmt.Sprintf("clients=%d", g), func(b *testing.B) {
			n := testnode.Start(b, testnode.WithLimits(
				restarea.Limit{Count: 1_000_000, WindowSeconds: 1}, restarea.Limit{Count: 1_000_000, WindowSeconds: 1}))
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
			b.ResetTimer()
			runParallel(b, g, func(int) {
				if s := benchPost(b, c, n.URL(), benchQuestion()); s != http.StatusCreated {
					b.Errorf("status %d, want 201", s)
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "posts/s")
		})
	}
}

// BenchmarkRESTReplay replays 1,000 stored requests over REST from 64
// goroutines.
func BenchmarkRESTReplay(b *testing.B) {
	n := testnode.Start(b, testnode.WithLimits(
		restarea.Limit{Count: 1_000_000, WindowSeconds: 1}, restarea.Limit{Count: 1_000_000, WindowSeconds: 1}))
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	stored := make([]restarea.PostRequest, 1000)
	for i := range stored {
		stored[i] = benchQuestion()
		if s := benchPost(b, c, n.URL(), stored[i]); s != http.StatusCreated {
			b.Fatalf("status %d, want 201", s)
		}
	}
	b.ResetTimer()
	runParallel(b, 64, func(i int) {
		if s := benchPost(b, c, n.URL(), stored[i%len(stored)]); s != http.StatusOK {
			b.Errorf("status %d, want 200 replayed", s)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "replays/s")
}
