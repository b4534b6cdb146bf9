package cluster

import (
	"context"
	"net/http"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

func TestBatchEncodingRoundTrip(t *testing.T) {
	cmds := []*fsm.Command{
		{Op: fsm.OpPost, Post: &fsm.PostCommand{Request: restarea.PostRequest{
			RequestID: "0b6e3f0e-6a1f-4d0e-9a51-1f2a3b4c5d6e", Type: restarea.TypeQuestion, Title: "héllo <b>", Body: "línea\nzwei\t",
			Actor: restarea.Actor{Name: "n", Model: "m", Trigger: "t"}, SubmissionMode: restarea.ModeAutonomous,
		}, Source: "203.0.113.9", Channel: restarea.ChannelMCP, AttemptID: "a-1"}},
		{Op: fsm.OpHide, EntryID: "x", Origin: "198.51.100.1"}, // audit field: JSON inside the batch
		{Op: fsm.OpPost, Post: &fsm.PostCommand{Request: restarea.PostRequest{Body: "bad \xff utf-8"}}},
	}
	b, err := encodeBatch(cmds)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cmds {
		want, _ := fsm.DecodeCommand(mustEncode(t, cmds[i]))
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("command %d: decoded %+v, want %+v", i, got[i], want)
		}
	}
	for _, bad := range [][]byte{nil, {}, b[:len(b)-1], append(append([]byte{}, b...), 0), {byte(MaxBatch + 1)}, {2, 5, 1}} {
		if _, err := decodeBatch(bad); err == nil {
			t.Errorf("decodeBatch(%q) accepted a malformed batch", bad)
		}
	}
}

func mustEncode(t *testing.T, c *fsm.Command) []byte {
	t.Helper()
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A leader without the binary path (an older version) gets JSON batches:
// the first binary attempt answers 404 (nothing applied) and is not tried
// again for that leader.
func TestApplyBatchFallsBackToJSONBatches(t *testing.T) {
	b := &batchBackend{}
	var binTries atomic.Int32
	inner := InternalHandler(b, NewGuard(testSecret, nil))
	c, addr := serveInternal(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == pathApplyBatchBin {
			binTries.Add(1)
			http.NotFound(w, r)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	for range 3 {
		outs, err := c.ApplyBatch(context.Background(), addr, []*fsm.Command{{Op: fsm.OpHide, EntryID: "a"}, {Op: fsm.OpHide, EntryID: "b"}})
		if err != nil || len(outs) != 2 || outs[0].Result.Entry.ID != "a" || outs[1].Result.Entry.ID != "b" {
			t.Fatalf("outcomes %+v, %v", outs, err)
		}
	}
	if n := binTries.Load(); n != 1 {
		t.Errorf("binary batch tried %d times on an older leader, want once", n)
	}
	if n := b.calls.Load(); n != 6 {
		t.Errorf("backend applied %d commands, want 6", n)
	}
}
