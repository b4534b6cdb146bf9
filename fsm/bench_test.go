package fsm_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"
	"github.com/restarea/restarea"
)

// BenchmarkApplyBatch applies batches of new questions, each from its own
// source, with limits that never refuse: each batch committed on its own,
// and batches sharing a transaction for up to 50 ms as a node runs them
// (group.go; the benchmark's batches come faster than that, so this is
// the cost per entry of a busy node).
func BenchmarkApplyBatch(b *testing.B) {
	for _, grouped := range []bool{false, true} {
		for _, size := range []int{1, 64} {
			b.Run(fmt.Sprintf("batch=%d/grouped=%v", size, grouped), func(b *testing.B) {
				var h *harness
				if grouped {
					h = groupHarness(b, 50*time.Millisecond)
				} else {
					h = newHarness(b)
				}
				h.mustSettings(restarea.SettingsPatch{
					PerSourceLimit: &restarea.Limit{Count: 1_000_000, WindowSeconds: 1},
					GlobalLimit:    &restarea.Limit{Count: 1_000_000, WindowSeconds: 1},
				})
				q := question(b, "benchmark")
				logs := make([]*raft.Log, size)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					h.advance(time.Millisecond)
					for j := range logs {
						q.RequestID = uuid.NewString()
						h.index++
						logs[j] = &raft.Log{Index: h.index, Type: raft.LogCommand,
							Data: h.encode(postCmd(q, q.RequestID, "attempt"))}
					}
					b.StartTimer()
					h.f.ApplyBatch(logs)
				}
				b.StopTimer()
				if n := h.count(); n != uint64(b.N*size) {
					b.Fatalf("Count() = %d, want %d", n, b.N*size)
				}
				b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "posts/s")
			})
		}
	}
}

// BenchmarkReplyToLargeQuestion applies replies, one per batch, to a
// question with a 20,000-character body: what checking the parent costs.
func BenchmarkReplyToLargeQuestion(b *testing.B) {
	h := newHarness(b)
	h.mustSettings(restarea.SettingsPatch{
		PerSourceLimit: &restarea.Limit{Count: 1_000_000, WindowSeconds: 1},
		GlobalLimit:    &restarea.Limit{Count: 1_000_000, WindowSeconds: 1},
	})
	q := question(b, "a long question")
	q.Body = strings.Repeat("本文", 10_000)
	parent := h.create(q)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		h.advance(time.Millisecond)
		r := reply(b, parent, "a short reply")
		h.index++
		logs := []*raft.Log{{Index: h.index, Type: raft.LogCommand, Data: h.encode(postCmd(r, r.RequestID, "attempt"))}}
		b.StartTimer()
		if res := asResult(b, h.f.ApplyBatch(logs)[0]); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
}
