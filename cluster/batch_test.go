package cluster

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// batchBackend answers ApplyLeader by the command's entry id: "notleader"
// → ErrNotLeader, "refused" → a coded error, anything else → a result.
type batchBackend struct {
	Backend
	calls atomic.Int32
}

func (b *batchBackend) ApplyLeader(_ context.Context, cmd *fsm.Command) (*fsm.Result, error) {
	b.calls.Add(1)
	switch cmd.EntryID {
	case "notleader":
		return nil, ErrNotLeader
	case "refused":
		return nil, restarea.Errorf(restarea.CodeUnavailable, "try later").WithRetryAfter(2e9)
	}
	return &fsm.Result{Index: 7, Entry: &restarea.Entry{ID: cmd.EntryID}}, nil
}

var testSecret = []byte("0123456789abcdef0123456789abcdef")

// serveInternal serves h and returns a client whose internal channel
// reaches it under any raft address.
func serveInternal(t *testing.T, h http.Handler) (*Client, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	return &Client{Internal: srv.Client(), Secret: testSecret}, addr
}

func TestApplyBatchOutcomesInOrder(t *testing.T) {
	b := &batchBackend{}
	c, addr := serveInternal(t, InternalHandler(b, NewGuard(testSecret, nil)))
	ids := []string{"a", "notleader", "b", "refused", "c"}
	cmds := make([]*fsm.Command, len(ids))
	for i, id := range ids {
		cmds[i] = &fsm.Command{Op: fsm.OpHide, EntryID: id}
	}
	outs, err := c.ApplyBatch(context.Background(), addr, cmds)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != len(ids) {
		t.Fatalf("%d outcomes for %d commands", len(outs), len(ids))
	}
	for i, id := range ids {
		o := outs[i]
		switch id {
		case "notleader":
			if !errors.Is(o.Err, ErrNotApplied) {
				t.Errorf("%s: err = %v, want ErrNotApplied", id, o.Err)
			}
		case "refused":
			if restarea.ErrorCode(o.Err) != restarea.CodeUnavailable || errors.Is(o.Err, ErrNotApplied) {
				t.Errorf("%s: err = %v, want unavailable (outcome unknown)", id, o.Err)
			}
			var e *restarea.Error
			if errors.As(o.Err, &e) && e.RetryAfter.Seconds() != 2 {
				t.Errorf("%s: retry after %v, want 2s", id, e.RetryAfter)
			}
		default:
			if o.Err != nil || o.Result == nil || o.Result.Entry.ID != id {
				t.Errorf("%s: outcome %+v, want its own result", id, o)
			}
		}
	}
	if n := b.calls.Load(); n != int32(len(ids)) {
		t.Errorf("backend applied %d commands, want %d", n, len(ids))
	}
}

func TestApplyBatchRefusesOversizedBatch(t *testing.T) {
	c, addr := serveInternal(t, InternalHandler(&batchBackend{}, NewGuard(testSecret, nil)))
	cmds := make([]*fsm.Command, MaxBatch+1)
	for i := range cmds {
		cmds[i] = &fsm.Command{Op: fsm.OpHide, EntryID: "x"}
	}
	_, err := c.ApplyBatch(context.Background(), addr, cmds)
	if restarea.ErrorCode(err) != restarea.CodeInvalidRequest {
		t.Fatalf("err = %v, want invalid_request", err)
	}
}

// TestApplyBatchOlderLeader: a leader without the batch path answers 404,
// which means nothing was applied and the sender falls back.
func TestApplyBatchOlderLeader(t *testing.T) {
	c, addr := serveInternal(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.NotFound(w, r)
	}))
	_, err := c.ApplyBatch(context.Background(), addr, []*fsm.Command{{Op: fsm.OpHide, EntryID: "a"}})
	if !errors.Is(err, ErrNoBatch) || !errors.Is(err, ErrNotApplied) {
		t.Fatalf("err = %v, want ErrNoBatch (not applied)", err)
	}
}

func TestCommandSizeBoundsABatchOfLargestPosts(t *testing.T) {
	big := &fsm.Command{Op: fsm.OpPost, Post: &fsm.PostCommand{Request: restarea.PostRequest{Body: strings.Repeat("<", 64<<10)}}}
	if n := CommandSize(big); n < 6*(64<<10) {
		t.Fatalf("CommandSize = %d, below the worst-case escaping of its body", n)
	}
	if CommandSize(big) > MaxBatchBytes {
		t.Fatalf("one largest post (%d) exceeds MaxBatchBytes (%d)", CommandSize(big), MaxBatchBytes)
	}
}
