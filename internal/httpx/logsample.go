package httpx

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultLogLinesPerSecond is how many refusal lines a LogSampler writes a
// second, at most, when the logger is not at Debug.
const DefaultLogLinesPerSecond = 10

// LogSampler writes the log lines of refused requests (4xx answers, 503s)
// without letting a flood of them grow the log as fast as it arrives. With
// the logger at Debug every line is written, at Debug. Otherwise lines go
// out at their own level at most perSecond a second (a token bucket, so a
// short burst passes whole); the others are dropped, counted, and the next
// line written carries "suppressed": the number dropped since the one
// before it. The requests themselves are counted in metrics either way.
type LogSampler struct {
	log       *slog.Logger
	perSecond float64
	now       func() time.Time

	mu         sync.Mutex
	tokens     float64
	last       time.Time
	suppressed int64
}

// NewLogSampler returns a sampler writing to log (nil: slog.Default());
// perSecond <= 0 means DefaultLogLinesPerSecond.
func NewLogSampler(log *slog.Logger, perSecond int) *LogSampler {
	if log == nil {
		log = slog.Default()
	}
	if perSecond <= 0 {
		perSecond = DefaultLogLinesPerSecond
	}
	return &LogSampler{log: log, perSecond: float64(perSecond), tokens: float64(perSecond), now: time.Now}
}

// Log writes msg with args at level, or at Debug, or drops it, as the
// type's comment says.
func (s *LogSampler) Log(ctx context.Context, level slog.Level, msg string, args ...any) {
	if s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.Log(ctx, slog.LevelDebug, msg, args...)
		return
	}
	if !s.log.Enabled(ctx, level) {
		return
	}
	suppressed, ok := s.take()
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	s.log.Log(ctx, level, msg, args...)
}

// Enabled reports whether a line at level could be written at all, so
// callers can skip building its attributes.
func (s *LogSampler) Enabled(ctx context.Context, level slog.Level) bool {
	return s.log.Enabled(ctx, level) || s.log.Enabled(ctx, slog.LevelDebug)
}

// take spends one line of the budget: ok with the count dropped before
// it, or not ok (and counted as dropped).
func (s *LogSampler) take() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if d := now.Sub(s.last); d > 0 {
		s.tokens = min(s.perSecond, s.tokens+d.Seconds()*s.perSecond)
	}
	s.last = now
	if s.tokens < 1 {
		s.suppressed++
		return 0, false
	}
	s.tokens--
	n := s.suppressed
	s.suppressed = 0
	return n, true
}

// Logger returns a logger whose every line goes through s, as Log's do:
// for code that takes a *slog.Logger or a log.Logger and logs what clients
// cause (the MCP SDK's transport, net/http's ErrorLog), so that a client
// cannot grow the log through it either. Lines share s's budget.
func (s *LogSampler) Logger() *slog.Logger {
	return slog.New(sampledHandler{s: s, next: s.log.Handler()})
}

// sampledHandler is the slog.Handler of LogSampler.Logger.
type sampledHandler struct {
	s    *LogSampler
	next slog.Handler
}

func (h sampledHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level) || h.next.Enabled(ctx, slog.LevelDebug)
}

func (h sampledHandler) Handle(ctx context.Context, rec slog.Record) error {
	if h.next.Enabled(ctx, slog.LevelDebug) {
		rec.Level = slog.LevelDebug
		return h.next.Handle(ctx, rec)
	}
	if !h.next.Enabled(ctx, rec.Level) {
		return nil
	}
	suppressed, ok := h.s.take()
	if !ok {
		return nil
	}
	if suppressed > 0 {
		rec = rec.Clone()
		rec.AddAttrs(slog.Int64("suppressed", suppressed))
	}
	return h.next.Handle(ctx, rec)
}

func (h sampledHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return sampledHandler{s: h.s, next: h.next.WithAttrs(attrs)}
}

func (h sampledHandler) WithGroup(name string) slog.Handler {
	return sampledHandler{s: h.s, next: h.next.WithGroup(name)}
}
