package fsm_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"
	"github.com/restarea/restarea"
)

// BenchmarkApplyBatch applies batches of new questions, each from its own
// source, with limits that never refuse.
func BenchmarkApplyBatch(b *testing.B) {
	for _, size := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			h := newHarness(b)
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
