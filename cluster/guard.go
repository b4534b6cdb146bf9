package cluster

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
	"github.com/restarea/restarea/transport"
)

// Body caps, one per kind of request: each is what an honest sender can
// need, so an unauthenticated sender (who may forge plausible headers)
// costs at most that much memory per request before the signature check.
const (
	// maxSmallBody: read-index, peer, remove, transfer carry an id at most.
	maxSmallBody = 1 << 10
	// maxJoinBody: a join carries an id, a raft address and a URL.
	maxJoinBody = 4 << 10
	// maxApplyBody: one forwarded command.
	maxApplyBody = MaxCommandBytes
	// maxBatchBody: a batch as takeBatch in node/forward.go builds it — at
	// most MaxBatchBytes of CommandSize estimates (a single command never
	// exceeds it, see MaxCommandBytes), plus the envelope and commas.
	maxBatchBody = MaxBatchBytes + 1<<10
)

// MaxCommandBytes bounds the JSON size of one forwarded command, the
// largest valid post: CommandSize of every text field at its limit in
// four-byte characters, each byte escaped into six, and a source address
// of up to 256 bytes.
const MaxCommandBytes = 1024 + 6*(4*(restarea.MaxTitle+restarea.MaxBody+restarea.MaxName+restarea.MaxModel+restarea.MaxTrigger)+256)

// Guard checks every signed cluster request: signature headers and
// timestamp before a byte of the body is read, the body against a cap for
// its kind, the HMAC, and then the nonce against replay. One Guard serves a
// node's internal channel and its public cluster paths, so a nonce is
// spent once on either. Safe for concurrent use.
type Guard struct {
	secret []byte
	log    *slog.Logger
	replay *transport.ReplayGuard

	unauthenticated atomic.Uint64
	replayed        atomic.Uint64
	tooLarge        atomic.Uint64

	logMu   sync.Mutex
	logLast time.Time
	logHeld uint64
}

// NewGuard returns a Guard for secret. With an empty secret it refuses
// every request (403): such a node is a cluster of one.
func NewGuard(secret []byte, log *slog.Logger) *Guard {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Guard{secret: secret, log: log, replay: transport.NewReplayGuard(0, 0)}
}

// GuardStats counts refused cluster requests.
type GuardStats struct {
	// Unauthenticated: missing, malformed, stale or wrong signatures.
	Unauthenticated uint64
	// Replayed: a valid signature whose nonce was already used.
	Replayed uint64
	// TooLarge: a body over the cap of its request kind.
	TooLarge uint64
}

// Stats returns the refusal counters.
func (g *Guard) Stats() GuardStats {
	return GuardStats{Unauthenticated: g.unauthenticated.Load(), Replayed: g.replayed.Load(), TooLarge: g.tooLarge.Load()}
}

// signed wraps next so that it runs only for a request signed with the
// secret, not seen before, whose body fits limit; next finds the body in
// r.Body.
func (g *Guard) signed(limit int64, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if len(g.secret) == 0 {
			httpx.WriteError(w, restarea.Errorf(restarea.CodeForbidden, "this node has no cluster secret; start every node with the same --cluster-secret to form a cluster"))
			return
		}
		s, err := transport.CheckHeaders(r, 0)
		if err != nil {
			g.refuse(w, r, &g.unauthenticated, err, restarea.Errorf(restarea.CodeUnauthorized, "cluster request not authenticated: wrong or missing cluster secret"))
			return
		}
		if r.ContentLength > limit {
			g.refuse(w, r, &g.tooLarge, errors.New("declared body over the cap"), tooLarge(limit))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if err != nil {
			var mb *http.MaxBytesError
			if errors.As(err, &mb) {
				g.refuse(w, r, &g.tooLarge, err, tooLarge(limit))
				return
			}
			httpx.WriteError(w, restarea.Errorf(restarea.CodeInvalidRequest, "cluster request body cut off: %v", err))
			return
		}
		if err := s.Verify(g.secret, r, body); err != nil {
			g.refuse(w, r, &g.unauthenticated, err, restarea.Errorf(restarea.CodeUnauthorized, "cluster request not authenticated: wrong or missing cluster secret"))
			return
		}
		if err := g.replay.Use(s); err != nil {
			if errors.Is(err, transport.ErrReplayed) {
				g.refuse(w, r, &g.replayed, err, restarea.Errorf(restarea.CodeUnauthorized, "cluster request refused: it is a replay (its nonce was already used); a sender signs every request afresh"))
				return
			}
			g.refuse(w, r, &g.unauthenticated, err, restarea.Errorf(restarea.CodeUnauthorized, "cluster request refused: %s", err.Error()))
			return
		}
		r.Body = io.NopCloser(bytesReader(body))
		next(w, r)
	}
}

func tooLarge(limit int64) *restarea.Error {
	return restarea.Errorf(restarea.CodePayloadTooLarge, "cluster request body over the %d-byte cap of this request kind", limit)
}

// refuse counts, logs (at most one line every 10 s, with the number held
// back, so a flood cannot flood the log) and answers a refused request.
func (g *Guard) refuse(w http.ResponseWriter, r *http.Request, counter *atomic.Uint64, cause error, answer *restarea.Error) {
	counter.Add(1)
	g.logMu.Lock()
	now := time.Now()
	logIt := now.Sub(g.logLast) >= 10*time.Second
	held := g.logHeld
	if logIt {
		g.logLast, g.logHeld = now, 0
	} else {
		g.logHeld++
	}
	g.logMu.Unlock()
	if logIt {
		g.log.Warn("refused cluster request", "path", r.URL.Path, "remote", r.RemoteAddr, "err", cause, "also_refused_unlogged", held)
	}
	if answer.Code == restarea.CodePayloadTooLarge {
		// The rest of the body is not worth reading to keep the
		// connection.
		w.Header().Set("Connection", "close")
	}
	httpx.WriteError(w, answer)
}

// Timeouts of the internal channel's HTTP server. Only nodes that proved
// the cluster secret reach it (the transport handshake), but a stuck or
// slow peer must still not hold a connection and its memory forever.
const (
	// InternalReadHeaderTimeout bounds reading a request's headers.
	InternalReadHeaderTimeout = 5 * time.Second
	// InternalReadTimeout bounds reading a whole request, body included:
	// the largest (a 4 MiB batch) needs well under it on any link a
	// cluster should run on.
	InternalReadTimeout = 15 * time.Second
	// InternalIdleTimeout closes a kept-alive connection left unused.
	InternalIdleTimeout = 2 * time.Minute
	// internalMaxHeaderBytes caps request headers (a few short ones).
	internalMaxHeaderBytes = 16 << 10
)

// NewInternalServer returns the http.Server for the internal channel,
// serving h with the timeouts above.
func NewInternalServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: InternalReadHeaderTimeout,
		ReadTimeout:       InternalReadTimeout,
		IdleTimeout:       InternalIdleTimeout,
		MaxHeaderBytes:    internalMaxHeaderBytes,
	}
}
