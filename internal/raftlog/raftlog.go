// Package raftlog is the hclog.Logger that hashicorp/raft (its core, its
// network transport and its snapshot store) writes through: it sends every
// line to a *slog.Logger, so raft's lines come out in the node's own shape
// (level, msg, time, attributes) and one pipeline parses both.
package raftlog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// raftLogger is raft's logger over a *slog.Logger. The logger's name becomes the attribute component ("raft", then
// "raft.<sub>" for Named), With's pairs become attributes.
type raftLogger struct {
	base    *slog.Logger // the node's logger
	sl      *slog.Logger // base with the component and implied attributes
	name    string
	implied []any // With's pairs, as given
	// min is the hclog level below which lines are dropped, shared by the
	// loggers derived by With and Named (as hclog's own are), on top of
	// what the slog handler enables.
	min *atomic.Int32
}

var _ hclog.Logger = (*raftLogger)(nil)

// New returns raft's logger over sl, named name (the attribute
// component), passing Info and above (the slog handler may drop more).
func New(sl *slog.Logger, name string) hclog.Logger {
	min := &atomic.Int32{}
	min.Store(int32(hclog.Info))
	return derive(sl, name, nil, min)
}

// derive builds a logger on base with a component and implied pairs.
func derive(base *slog.Logger, name string, implied []any, min *atomic.Int32) *raftLogger {
	sl := base.With("component", name)
	for _, a := range attrs(implied) {
		sl = sl.With(a)
	}
	return &raftLogger{base: base, sl: sl, name: name, implied: implied, min: min}
}

// slogLevel maps an hclog level onto slog's: Trace lies below Debug.
func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo // Info and NoLevel
}

// enabled reports whether a line at level l would be written.
func (r *raftLogger) enabled(l hclog.Level) bool {
	if l == hclog.NoLevel {
		l = hclog.Info
	}
	if l == hclog.Off || l < hclog.Level(r.min.Load()) {
		return false
	}
	return r.sl.Enabled(context.Background(), slogLevel(l))
}

// attrs turns hclog's alternating keys and values into slog attributes.
// A value without a key gets hclog's key for it; hclog.Fmt values are
// formatted.
func attrs(args []any) []slog.Attr {
	out := make([]slog.Attr, 0, (len(args)+1)/2)
	for i := 0; i < len(args); i += 2 {
		if i+1 == len(args) {
			out = append(out, slog.Any(hclog.MissingKey, value(args[i])))
			break
		}
		key, ok := args[i].(string)
		if !ok {
			key = fmt.Sprint(args[i])
		}
		out = append(out, slog.Any(key, value(args[i+1])))
	}
	return out
}

// value turns an hclog value into what slog should write: hclog.Fmt
// values formatted, Stringers (raft passes itself, whose fields are
// unexported) as their string; errors slog writes as their text already.
func value(v any) any {
	switch v := v.(type) {
	case hclog.Format:
		if len(v) == 0 {
			return ""
		}
		if format, ok := v[0].(string); ok {
			return fmt.Sprintf(format, v[1:]...)
		}
		return fmt.Sprint(v...)
	case error:
		return v
	case fmt.Stringer:
		return v.String()
	}
	return v
}

// Log implements hclog.Logger.
func (r *raftLogger) Log(level hclog.Level, msg string, args ...any) {
	level = expected(level, msg, args)
	if !r.enabled(level) {
		return
	}
	r.sl.LogAttrs(context.Background(), slogLevel(level), msg, attrs(args)...)
}

// expected lowers to Info raft's warnings of states a node passes through
// when it starts: the first election of a node that has never heard of a
// leader (raft warns of a heartbeat timeout with no last leader) is how
// every cluster starts, not a fault.
func expected(level hclog.Level, msg string, args []any) hclog.Level {
	if level != hclog.Warn || msg != "heartbeat timeout reached, starting election" {
		return level
	}
	for i := 0; i+1 < len(args); i += 2 {
		if args[i] == "last-leader-id" && fmt.Sprint(value(args[i+1])) != "" {
			return level
		}
	}
	return hclog.Info
}

// Trace implements hclog.Logger.
func (r *raftLogger) Trace(msg string, args ...any) { r.Log(hclog.Trace, msg, args...) }

// Debug implements hclog.Logger.
func (r *raftLogger) Debug(msg string, args ...any) { r.Log(hclog.Debug, msg, args...) }

// Info implements hclog.Logger.
func (r *raftLogger) Info(msg string, args ...any) { r.Log(hclog.Info, msg, args...) }

// Warn implements hclog.Logger.
func (r *raftLogger) Warn(msg string, args ...any) { r.Log(hclog.Warn, msg, args...) }

// Error implements hclog.Logger.
func (r *raftLogger) Error(msg string, args ...any) { r.Log(hclog.Error, msg, args...) }

// IsTrace implements hclog.Logger.
func (r *raftLogger) IsTrace() bool { return r.enabled(hclog.Trace) }

// IsDebug implements hclog.Logger.
func (r *raftLogger) IsDebug() bool { return r.enabled(hclog.Debug) }

// IsInfo implements hclog.Logger.
func (r *raftLogger) IsInfo() bool { return r.enabled(hclog.Info) }

// IsWarn implements hclog.Logger.
func (r *raftLogger) IsWarn() bool { return r.enabled(hclog.Warn) }

// IsError implements hclog.Logger.
func (r *raftLogger) IsError() bool { return r.enabled(hclog.Error) }

// ImpliedArgs implements hclog.Logger.
func (r *raftLogger) ImpliedArgs() []any { return append([]any(nil), r.implied...) }

// With implements hclog.Logger: the pairs become attributes of every line.
func (r *raftLogger) With(args ...any) hclog.Logger {
	if n := len(args); n%2 != 0 {
		// A value without a key gets hclog's key, so implied stays paired.
		args = append(append([]any(nil), args[:n-1]...), hclog.MissingKey, args[n-1])
	}
	return derive(r.base, r.name, append(append([]any(nil), r.implied...), args...), r.min)
}

// Name implements hclog.Logger.
func (r *raftLogger) Name() string { return r.name }

// Named implements hclog.Logger: the component becomes "<name>.<sub>".
func (r *raftLogger) Named(name string) hclog.Logger {
	if r.name != "" {
		name = r.name + "." + name
	}
	return r.ResetNamed(name)
}

// ResetNamed implements hclog.Logger: the component becomes name.
func (r *raftLogger) ResetNamed(name string) hclog.Logger {
	return derive(r.base, name, r.implied, r.min)
}

// SetLevel implements hclog.Logger.
func (r *raftLogger) SetLevel(level hclog.Level) { r.min.Store(int32(level)) }

// GetLevel implements hclog.Logger.
func (r *raftLogger) GetLevel() hclog.Level { return hclog.Level(r.min.Load()) }

// StandardLogger implements hclog.Logger.
func (r *raftLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(r.StandardWriter(opts), "", 0)
}

// StandardWriter implements hclog.Logger: each line written is one log
// line, at opts.ForceLevel, or at the level of its "[ERR]"-style prefix
// with opts.InferLevels, else at Info.
func (r *raftLogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	if opts == nil {
		opts = &hclog.StandardLoggerOptions{}
	}
	return &stdWriter{r: r, opts: *opts}
}

type stdWriter struct {
	r    *raftLogger
	opts hclog.StandardLoggerOptions
}

// prefixes are the level prefixes of standard-library log lines.
var prefixes = []struct {
	p string
	l hclog.Level
}{
	{"[TRACE]", hclog.Trace}, {"[DEBUG]", hclog.Debug}, {"[INFO]", hclog.Info},
	{"[WARN]", hclog.Warn}, {"[ERROR]", hclog.Error}, {"[ERR]", hclog.Error},
}

func (w *stdWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		msg, level := strings.TrimSpace(string(line)), hclog.Info
		if w.opts.ForceLevel != hclog.NoLevel {
			level = w.opts.ForceLevel
		}
		if w.opts.InferLevels || w.opts.ForceLevel != hclog.NoLevel {
			for _, pr := range prefixes {
				if rest, ok := strings.CutPrefix(msg, pr.p); ok {
					msg = strings.TrimSpace(rest)
					if w.opts.ForceLevel == hclog.NoLevel {
						level = pr.l
					}
					break
				}
			}
		}
		w.r.Log(level, msg)
	}
	return len(p), nil
}
