package fsm_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// benchLimits never refuse a benchmark's posts.
func benchLimits(h *harness) {
	h.mustSettings(restarea.SettingsPatch{
		PerSourceLimit: &restarea.Limit{Count: 1_000_000, WindowSeconds: 1},
		GlobalLimit:    &restarea.Limit{Count: 1_000_000, WindowSeconds: 1},
	})
}

// fill stores n entries in batches of 1,000 (a question then replies to it,
// ten at a time) and returns one question with replies replies, posted
// first.
func fill(b *testing.B, h *harness, n, replies int) string {
	b.Helper()
	body := strings.Repeat("x", 512)
	thread := h.create(question(b, "long thread"))
	cmds := make([]fsm.Command, 0, 1000)
	parent := thread
	for i := 0; i < n; i++ {
		var req restarea.PostRequest
		switch {
		case i < replies:
			req = reply(b, thread, body)
		case i%10 == 0:
			req = question(b, "filler")
			parent = ""
		default:
			req = reply(b, parent, body)
		}
		c := postCmd(req, fmt.Sprintf("s%d", i%512), "a")
		if parent == "" {
			parent = c.Post.NewID
		}
		cmds = append(cmds, c)
		if len(cmds) == cap(cmds) || i == n-1 {
			h.advance(time.Second)
			h.batch(cmds...)
			cmds = cmds[:0]
		}
	}
	return thread
}

// BenchmarkApplyGrowth applies batches of 64 new questions to a store that
// already holds 10,000 or 100,000 entries: the cost per post should stay
// flat as the store grows.
func BenchmarkApplyGrowth(b *testing.B) {
	for _, stored := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			h := newHarness(b)
			benchLimits(h)
			fill(b, h, stored, 0)
			body := strings.Repeat("y", 512)
			logs := make([]*raft.Log, 64)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				h.advance(time.Millisecond)
				for j := range logs {
					q := question(b, "growth")
					q.Body = body
					h.index++
					logs[j] = &raft.Log{Index: h.index, Type: raft.LogCommand,
						Data: h.encode(postCmd(q, fmt.Sprintf("g%d", j), "a"))}
				}
				b.StartTimer()
				h.f.ApplyBatch(logs)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*64)/b.Elapsed().Seconds(), "posts/s")
		})
	}
}

// BenchmarkApplyReplay replays stored requests (same request_id, same
// content, another attempt) in batches of 64: the state machine answers
// from by_request and writes only the per-source record.
func BenchmarkApplyReplay(b *testing.B) {
	h := newHarness(b)
	benchLimits(h)
	stored := make([]restarea.PostRequest, 1000)
	for i := range stored {
		stored[i] = question(b, "replayed")
		h.create(stored[i])
	}
	logs := make([]*raft.Log, 64)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		h.advance(time.Millisecond)
		for j := range logs {
			h.index++
			logs[j] = &raft.Log{Index: h.index, Type: raft.LogCommand,
				Data: h.encode(postCmd(stored[(i*64+j)%len(stored)], fmt.Sprintf("r%d", j), uuid.NewString()))}
		}
		b.StartTimer()
		for _, r := range h.f.ApplyBatch(logs) {
			if res := r.(*fsm.Result); !res.Replayed {
				b.Fatalf("not a replay: %+v", res)
			}
		}
	}
	b.StopTimer()
	if n := h.count(); n != uint64(len(stored)+0) {
		b.Fatalf("Count() = %d after replays, want %d", n, len(stored))
	}
	b.ReportMetric(float64(b.N*64)/b.Elapsed().Seconds(), "replays/s")
}

// BenchmarkRepliesPage reads page 1 and the last page of a 20,000-reply
// thread in a store of 50,000 entries: a cursor seeks, so both cost the
// same.
func BenchmarkRepliesPage(b *testing.B) {
	h := newHarness(b)
	benchLimits(h)
	thread := fill(b, h, 50_000, 20_000)
	first, last := "", ""
	pages := 0
	for cursor := ""; ; pages++ {
		p, err := h.f.Replies(thread, cursor, 50)
		if err != nil {
			b.Fatal(err)
		}
		if p.NextCursor == nil {
			last = cursor
			break
		}
		cursor = *p.NextCursor
	}
	for _, c := range []struct {
		name, cursor string
	}{{"page=1", first}, {fmt.Sprintf("page=%d", pages+1), last}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				p, err := h.f.Replies(thread, c.cursor, 50)
				if err != nil || len(p.Replies) == 0 {
					b.Fatalf("page: %d replies, %v", len(p.Replies), err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
		})
	}
}
