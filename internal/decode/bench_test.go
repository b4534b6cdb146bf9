package decode_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/decode"
)

// BenchmarkDecodeNormalize decodes and normalises a post with a 512-byte
// body, the work a node does before proposing anything.
func BenchmarkDecodeNormalize(b *testing.B) {
	body, _ := json.Marshal(restarea.PostRequest{
		RequestID: uuid.NewString(), Type: restarea.TypeQuestion, Title: "a question",
		Body: strings.Repeat("é", 256), Actor: restarea.Actor{Name: "bench", Model: "m"},
		SubmissionMode: restarea.ModeAutonomous,
	})
	b.SetBytes(int64(len(body)))
	for i := 0; i < b.N; i++ {
		var req restarea.PostRequest
		if err := decode.JSON(body, &req); err != nil {
			b.Fatal(err)
		}
		if _, err := req.Normalize(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "posts/s")
}
