package httpx

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A flood of refusals writes at most the budget a second, and the next
// line says how many were dropped; at Debug nothing is dropped.
func TestLogSampler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s := NewLogSampler(log, 3)
	now := time.Unix(100, 0)
	s.now = func() time.Time { return now }
	s.last = now
	ctx := context.Background()
	for range 1000 {
		s.Log(ctx, slog.LevelInfo, "http request", "status", 400)
	}
	if n := strings.Count(buf.String(), "\n"); n != 3 {
		t.Fatalf("%d lines for a burst of 1000 with a budget of 3:\n%s", n, buf.String())
	}
	now = now.Add(time.Second)
	buf.Reset()
	s.Log(ctx, slog.LevelInfo, "http request", "status", 400)
	if !strings.Contains(buf.String(), "suppressed=997") {
		t.Fatalf("the line after the flood does not count what was dropped: %s", buf.String())
	}

	buf.Reset()
	debug := NewLogSampler(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), 3)
	for range 50 {
		debug.Log(ctx, slog.LevelInfo, "http request")
	}
	if n := strings.Count(buf.String(), "level=DEBUG"); n != 50 {
		t.Fatalf("at Debug, %d of 50 lines written", n)
	}

	buf.Reset()
	warnOnly := NewLogSampler(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})), 3)
	warnOnly.Log(ctx, slog.LevelInfo, "http request")
	if buf.Len() != 0 || warnOnly.suppressed != 0 {
		t.Fatal("a line below the logger's level was written or counted")
	}
}

// Lines written through Logger share the sampler's budget, carry the
// suppressed count, and are all written (at Debug) when debugging.
func TestLogSamplerLogger(t *testing.T) {
	var buf bytes.Buffer
	s := NewLogSampler(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), 3)
	now := time.Unix(100, 0)
	s.now = func() time.Time { return now }
	s.last = now
	log := s.Logger().With("component", "sdk")
	for range 500 {
		log.Warn("failed to connect")
		s.Log(context.Background(), slog.LevelInfo, "http request")
	}
	if n := strings.Count(buf.String(), "\n"); n != 3 {
		t.Fatalf("%d lines for 1000 refusals with a budget of 3:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "component=sdk") {
		t.Fatalf("the logger's attributes are lost: %s", buf.String())
	}
	now = now.Add(time.Second)
	buf.Reset()
	log.Warn("failed to connect")
	if !strings.Contains(buf.String(), "suppressed=997") {
		t.Fatalf("the line after the flood does not count what was dropped: %s", buf.String())
	}

	buf.Reset()
	debug := NewLogSampler(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), 3).Logger()
	for range 50 {
		debug.Warn("x")
	}
	if n := strings.Count(buf.String(), "level=DEBUG"); n != 50 {
		t.Fatalf("at Debug, %d of 50 lines written", n)
	}
}
