package cluster

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/decode"
	"github.com/restarea/restarea/internal/httpx"
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
	// FinalizeLeader raises the cluster version on the leader to the
	// newest every member knows (see node's FinalizeUpgrade).
	FinalizeLeader(ctx context.Context) (FinalizeAnswer, error)
}

// InternalHandler serves the internal channel. Every request must be
// signed under g's secret, fit the body cap of its kind and not be a replay
// (see Guard); the transport port in front of it already admits only nodes
// that proved the secret.
func InternalHandler(b Backend, g *Guard) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+pathApply, g.signed(maxApplyBody, func(w http.ResponseWriter, r *http.Request) {
		var cmd fsm.Command
		if !decodeBody(w, r, &cmd) {
			return
		}
		res, err := b.ApplyLeader(r.Context(), &cmd)
		if err != nil {
			writeErr(w, err)
			return
		}
		httpx.WriteJSON(w, http.StatusOK, res)
	}))
	mux.HandleFunc("POST "+pathApplyBatch, g.signed(maxBatchBody, serveApplyBatch(b)))
	mux.HandleFunc("POST "+pathApplyBatchBin, g.signed(maxBatchBody, serveApplyBatchBin(b)))
	mux.HandleFunc("POST "+pathReadIndex, g.signed(maxSmallBody, func(w http.ResponseWriter, r *http.Request) {
		idx, err := b.ReadIndex(r.Context())
		if err != nil {
			writeErr(w, err)
			return
		}
		httpx.WriteJSON(w, http.StatusOK, indexResponse{Index: idx})
	}))
	mux.HandleFunc("POST "+pathPeer, g.signed(maxSmallBody, func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, b.Peer())
	}))
	mux.HandleFunc("POST "+pathJoin, g.signed(maxJoinBody, action(b.JoinLeader)))
	mux.HandleFunc("POST "+pathFinalize, g.signed(maxSmallBody, func(w http.ResponseWriter, r *http.Request) {
		var req idRequest // carries the operator's origin, for the audit trail
		if !decodeBody(w, r, &req) {
			return
		}
		ans, err := b.FinalizeLeader(restarea.WithOrigin(r.Context(), req.Origin))
		if err != nil {
			writeErr(w, err)
			return
		}
		httpx.WriteJSON(w, http.StatusOK, ans)
	}))
	mux.HandleFunc("POST "+pathRemove, g.signed(maxSmallBody, action(func(ctx context.Context, req idRequest) error {
		return b.RemoveLeader(restarea.WithOrigin(ctx, req.Origin), req.ID)
	})))
	mux.HandleFunc("POST "+pathTransfer, g.signed(maxSmallBody, action(func(ctx context.Context, req idRequest) error {
		return b.TransferLeader(restarea.WithOrigin(ctx, req.Origin), req.ID)
	})))
	return mux
}

// PublicHandler serves PathJoin and PathPeer on a node's public listener,
// for nodes that were given ordinary URLs with --join. Requests must be
// signed (see Guard); a node without a secret refuses them all. Anyone can
// reach this port, so the signature headers are checked before the body is
// read, and a join's body is capped at 4 KiB.
func PublicHandler(b Backend, g *Guard) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathJoin, g.signed(maxJoinBody, action(b.Join)))
	mux.HandleFunc("GET "+PathPeer, g.signed(maxSmallBody, func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, b.Peer())
	}))
	return mux
}

// action serves a request that carries a T and answers only success or an
// error.
func action[T any](do func(context.Context, T) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req T
		if !decodeBody(w, r, &req) {
			return
		}
		writeOK(w, do(r.Context(), req))
	}
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = decode.JSON(body, v)
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
