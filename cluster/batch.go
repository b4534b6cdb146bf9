package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/httpx"
)

// pathApplyBatch carries several forwarded commands in one request: a
// follower under load sends what queued up while its previous batch was in
// flight, so the cost of a round trip is shared.
const pathApplyBatch = "/internal/v1/apply-batch"

// MaxBatch bounds the commands of one batched forward; MaxBatchBytes
// bounds their estimated encoded size (see CommandSize). The leader caps an
// apply-batch body at MaxBatchBytes plus 1 KiB of envelope.
const (
	MaxBatch      = 64
	MaxBatchBytes = 4 << 20
)

// CommandSize is a worst-case estimate of cmd's JSON size: every byte of
// its free text may be escaped into six (\u003c); 1 KiB covers the keys
// and the short fields (ids, type, channel, time).
func CommandSize(cmd *fsm.Command) int {
	n := 1024
	if p := cmd.Post; p != nil {
		r := p.Request
		n += 6 * (len(r.Title) + len(r.Body) + len(r.Actor.Name) + len(r.Actor.Model) + len(r.Actor.Trigger) + len(p.Source))
	}
	return n
}

type batchRequest struct {
	Commands []*fsm.Command `json:"commands"`
}

type batchResponse struct {
	Items []batchItem `json:"items"`
}

// batchItem is the outcome of one command: a result, or an error with the
// code it would have had alone (not_leader: certainly not applied).
type batchItem struct {
	Result *fsm.Result   `json:"result,omitempty"`
	Error  *batchItemErr `json:"error,omitempty"`
}

type batchItemErr struct {
	Code          restarea.Code `json:"code"`
	Message       string        `json:"message"`
	RetryAfterSec float64       `json:"retry_after_seconds,omitempty"`
}

// Outcome is what became of one command of a batch: Result, or Err (which
// wraps ErrNotApplied when the command certainly was not applied).
type Outcome struct {
	Result *fsm.Result
	Err    error
}

// ErrNoBatch is returned by ApplyBatch when the leader predates batched
// forwarding (it answered 404): nothing was applied; send one by one.
var ErrNoBatch = fmt.Errorf("%w: the leader does not accept batches", ErrNotApplied)

// ApplyBatch forwards cmds to the leader at raftAddr in one request and
// returns one Outcome per command, in order. An error for the whole
// request has the meaning it has for Apply: ErrNotApplied, or an unknown
// outcome for every command.
func (c *Client) ApplyBatch(ctx context.Context, raftAddr string, cmds []*fsm.Command) ([]Outcome, error) {
	var res batchResponse
	var err error
	var e *restarea.Error
	binaryOK := true
	if _, old := c.noBinary.Load(raftAddr); old {
		binaryOK = false
	}
	if binaryOK {
		var body []byte
		if body, err = encodeBatch(cmds); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNotApplied, err)
		}
		err = c.callRaw(ctx, c.Internal, "http://"+raftAddr+pathApplyBatchBin, http.MethodPost, body, "application/octet-stream", &res)
		if errors.As(err, &e) && e.Code == restarea.CodeNotFound {
			// A leader of an older version: nothing was applied.
			c.noBinary.Store(raftAddr, true)
			binaryOK = false
		}
	}
	if !binaryOK {
		err = c.call(ctx, c.Internal, "http://"+raftAddr+pathApplyBatch, http.MethodPost, batchRequest{Commands: cmds}, &res)
		if errors.As(err, &e) && e.Code == restarea.CodeNotFound {
			return nil, ErrNoBatch
		}
	}
	if err != nil {
		return nil, err
	}
	if len(res.Items) != len(cmds) {
		return nil, restarea.Errorf(restarea.CodeUnavailable, "%s answered %d outcomes for %d commands (outcome unknown)", raftAddr, len(res.Items), len(cmds)).WithRetryAfter(time.Second)
	}
	out := make([]Outcome, len(cmds))
	for i, it := range res.Items {
		switch {
		case it.Error != nil && it.Error.Code == codeNotLeader:
			out[i].Err = fmt.Errorf("%w: %s is not the leader", ErrNotApplied, raftAddr)
		case it.Error != nil:
			e := restarea.Errorf(it.Error.Code, "%s", it.Error.Message)
			e.RetryAfter = time.Duration(it.Error.RetryAfterSec * float64(time.Second))
			out[i].Err = e
		case it.Result == nil:
			out[i].Err = restarea.Errorf(restarea.CodeUnavailable, "%s answered no outcome (outcome unknown)", raftAddr).WithRetryAfter(time.Second)
		default:
			out[i].Result = it.Result
		}
	}
	return out, nil
}

// serveApplyBatch applies every command of a batch concurrently, so that
// raft gathers them into as few log appends as it can, and answers each
// outcome.
func serveApplyBatch(b Backend) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req batchRequest
		if err == nil {
			// The sender is a peer that signed the request; its commands
			// are checked again by the state machine, so the strict
			// decoding that protects the public API is not needed here.
			err = json.Unmarshal(body, &req)
		}
		if err != nil || len(req.Commands) > MaxBatch {
			httpx.WriteError(w, restarea.Errorf(restarea.CodeInvalidRequest, "malformed batch (at most %d commands)", MaxBatch))
			return
		}
		httpx.WriteJSON(w, http.StatusOK, batchResponse{Items: applyAll(r, b, req.Commands)})
	}
}

// applyAll applies cmds concurrently and returns their outcomes in order.
func applyAll(r *http.Request, b Backend, cmds []*fsm.Command) []batchItem {
	items := make([]batchItem, len(cmds))
	var wg sync.WaitGroup
	for i, cmd := range cmds {
		if cmd == nil {
			items[i].Error = &batchItemErr{Code: restarea.CodeInvalidRequest, Message: "empty command"}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			items[i] = applyOne(r.Context(), b, cmd)
		}()
	}
	wg.Wait()
	return items
}

func applyOne(ctx context.Context, b Backend, cmd *fsm.Command) batchItem {
	res, err := b.ApplyLeader(ctx, cmd)
	if err == nil {
		return batchItem{Result: res}
	}
	if errors.Is(err, ErrNotLeader) {
		return batchItem{Error: &batchItemErr{Code: codeNotLeader, Message: err.Error()}}
	}
	var e *restarea.Error
	if !errors.As(err, &e) {
		e = restarea.Errorf(restarea.CodeUnavailable, "%v", err)
	}
	return batchItem{Error: &batchItemErr{Code: e.Code, Message: e.Message, RetryAfterSec: e.RetryAfter.Seconds()}}
}
