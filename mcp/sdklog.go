package mcp

import (
	"context"
	"log/slog"
)

// sdkLogger is the logger handed to the SDK's server: its per-call
// connection chatter ("server connecting", "server session connected"
// and "disconnected", once for every stateless call, with no session id)
// says nothing an operator acts on, so what it logs below WARN is
// written at DEBUG; its warnings and errors keep their level.
func sdkLogger(l *slog.Logger) *slog.Logger {
	return slog.New(demoteHandler{next: l.Handler()})
}

// demoteHandler writes records below WARN at DEBUG.
type demoteHandler struct{ next slog.Handler }

func (h demoteHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, demote(level))
}

func (h demoteHandler) Handle(ctx context.Context, rec slog.Record) error {
	rec.Level = demote(rec.Level)
	return h.next.Handle(ctx, rec)
}

func (h demoteHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return demoteHandler{next: h.next.WithAttrs(attrs)}
}

func (h demoteHandler) WithGroup(name string) slog.Handler {
	return demoteHandler{next: h.next.WithGroup(name)}
}

func demote(level slog.Level) slog.Level {
	if level < slog.LevelWarn {
		return min(level, slog.LevelDebug)
	}
	return level
}
