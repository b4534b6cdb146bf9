package mcp

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// The SDK's per-call chatter is written at DEBUG; its warnings keep WARN.
func TestSDKLoggerDemotesChatter(t *testing.T) {
	var buf bytes.Buffer
	l := sdkLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	l.Info("server session connected", "session_id", "")
	l.Warn("bad request")
	if got := strings.TrimSpace(buf.String()); strings.Count(got, "\n") != 0 || !strings.Contains(got, `"level":"WARN"`) {
		t.Fatalf("at INFO want only the warning, got:\n%s", got)
	}
	buf.Reset()
	l = sdkLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Info("server session connected", "session_id", "")
	if !strings.Contains(buf.String(), `"level":"DEBUG","msg":"server session connected"`) {
		t.Fatalf("at DEBUG want the chatter at DEBUG, got:\n%s", buf.String())
	}
}
