package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/httpx"
	"github.com/restarea/restarea/transport"
)

// Backend is the node as the cluster channel sees it. The leader-only
// methods return ErrNotLeader on a follower and never forward themselves,
// so a request cannot bounce between nodes.
type Backend interface {
	// ApplyLeader stamps and applies a command on the leader.
	ApplyLeader(ctx context.Context, cmd *fsm.Command) (*fsm.Result, error)
	// ReadIndex returns a commit index after confirming leadership.
	ReadIndex(ctx context.Context) (uint64, error)
	// JoinLeader adds or updates a voter on the leader.
	JoinLeader(ctx context.Context, req JoinRequest) error
	// RemoveLeader removes a server on the leader.
	RemoveLeader(ctx context.Context, id string) error
	// TransferLeader hands leadership to id ("" = any voter).
	TransferLeader(ctx context.Context, id string) error
	// Join routes a join to the leader (used by the public join path).
	Join(ctx context.Context, req JoinRequest) error
	// Peer describes this node.
	Peer() PeerInfo
}

// maxInternalBody caps internal requests: a batch of forwarded posts
// (MaxBatchBytes) with room to spare.
const maxInternalBody = 8 << 20

// InternalHandler serves the internal channel. Every request must carry a
// valid signature under secret; the transport port should also require
// mutual TLS where the network is not trusted.
func InternalHandler(b Backend, secret []byte, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+pathApply, func(w http.ResponseWriter, r *http.Request) {
		var cmd fsm.Command
		if !decode(w, r, &cmd) {
			return
		}
		res, err := b.ApplyLeader(r.Context(), &cmd)
		if err != nil {
			writeErr(w, err)
			return
		}
		httpx.WriteJSON(w, http.StatusOK, res)
	})
	mux.HandleFunc("POST "+pathApplyBatch, serveApplyBatch(b))
	mux.HandleFunc("POST "+pathReadIndex, func(w http.ResponseWriter, r *http.Request) {
		idx, err := b.ReadIndex(r.Context())
		if err != nil {
			writeErr(w, err)
			return
		}
		httpx.WriteJSON(w, http.StatusOK, indexResponse{Index: idx})
	})
	mux.HandleFunc("POST "+pathPeer, func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, b.Peer())
	})
	mux.HandleFunc("POST "+pathJoin, action(b.JoinLeader))
	mux.HandleFunc("POST "+pathRemove, action(func(ctx context.Context, req idRequest) error {
		return b.RemoveLeader(restarea.WithOrigin(ctx, req.Origin), req.ID)
	}))
	mux.HandleFunc("POST "+pathTransfer, action(func(ctx context.Context, req idRequest) error {
		return b.TransferLeader(restarea.WithOrigin(ctx, req.Origin), req.ID)
	}))
	return signed(secret, log, mux)
}

// PublicHandler serves PathJoin and PathPeer on a node's public listener,
// for nodes that were given ordinary URLs with --join. Requests must be
// signed; a node without a secret refuses them all.
func PublicHandler(b Backend, secret []byte, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathJoin, action(b.Join))
	mux.HandleFunc("GET "+PathPeer, func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, b.Peer())
	})
	return signed(secret, log, mux)
}

// signed lets through only requests signed with secret. The body is read
// (capped) for the check and handed on.
func signed(secret []byte, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxInternalBody))
		if err != nil {
			httpx.WriteError(w, restarea.Errorf(restarea.CodePayloadTooLarge, "internal request too large"))
			return
		}
		if len(secret) == 0 {
			httpx.WriteError(w, restarea.Errorf(restarea.CodeForbidden, "this node has no cluster secret; start every node with the same --cluster-secret to form a cluster"))
			return
		}
		if err := transport.VerifyRequest(secret, r, body, 0); err != nil {
			log.Warn("refused unauthenticated cluster request", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			httpx.WriteError(w, restarea.Errorf(restarea.CodeUnauthorized, "cluster request not authenticated: wrong or missing cluster secret"))
			return
		}
		r.Body = io.NopCloser(bytesReader(body))
		next.ServeHTTP(w, r)
	})
}

// action serves a request that carries a T and answers only success or an
// error.
func action[T any](do func(context.Context, T) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req T
		if !decode(w, r, &req) {
			return
		}
		writeOK(w, do(r.Context(), req))
	}
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = restarea.DecodeJSON(body, v)
	}
	if err != nil {
		httpx.WriteError(w, err)
		return false
	}
	return true
}

func writeOK(w http.ResponseWriter, err error) {
	if err != nil {
		writeErr(w, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, struct{}{})
}

// writeErr answers an error; ErrNotLeader gets status 421 (misdirected)
// and its own code, so the sender knows the command was not applied.
func writeErr(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrNotLeader) {
		httpx.WriteJSON(w, http.StatusMisdirectedRequest, struct {
			Error httpx.ErrorBody `json:"error"`
		}{httpx.ErrorBody{Code: codeNotLeader, Message: err.Error()}})
		return
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		err = restarea.Errorf(restarea.CodeUnavailable, "timed out on the leader; outcome unknown").WithRetryAfter(time.Second)
	}
	httpx.WriteError(w, err)
}
