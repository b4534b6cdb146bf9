package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/transport"
)

// countingBody counts the bytes a handler reads from it.
type countingBody struct {
	r    io.Reader
	read atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c *countingBody) Close() error { return nil }

// A refused request's body is never read, or read no further than the cap
// of its kind, and each refusal is counted under its reason.
func TestGuardRefusesBeforeReadingTheBody(t *testing.T) {
	g := NewGuard(testSecret, nil)
	h := InternalHandler(&batchBackend{}, g)
	big := strings.Repeat("x", 8<<20)
	fresh := func(r *http.Request) {
		r.Header.Set(transport.HeaderTimestamp, strconv.FormatInt(time.Now().UnixMilli(), 10))
		r.Header.Set(transport.HeaderNonce, strings.Repeat("ab", 16))
		r.Header.Set(transport.HeaderSignature, strings.Repeat("00", 32))
	}
	for _, tc := range []struct {
		name     string
		path     string
		prep     func(r *http.Request)
		length   int64 // -1: chunked (unknown)
		status   int
		maxRead  int64
		counter  func(GuardStats) uint64
		wantSeen uint64
	}{
		{"unsigned", pathApplyBatch, func(*http.Request) {}, int64(len(big)), http.StatusUnauthorized, 0,
			func(s GuardStats) uint64 { return s.Unauthenticated }, 1},
		{"stale", pathApplyBatch, func(r *http.Request) {
			fresh(r)
			r.Header.Set(transport.HeaderTimestamp, strconv.FormatInt(time.Now().Add(-time.Minute).UnixMilli(), 10))
		}, int64(len(big)), http.StatusUnauthorized, 0, func(s GuardStats) uint64 { return s.Unauthenticated }, 2},
		{"declared over the join cap", pathJoin, fresh, maxJoinBody + 1, http.StatusRequestEntityTooLarge, 0,
			func(s GuardStats) uint64 { return s.TooLarge }, 1},
		{"chunked over the batch cap", pathApplyBatch, fresh, -1, http.StatusRequestEntityTooLarge, maxBatchBody + 64<<10,
			func(s GuardStats) uint64 { return s.TooLarge }, 2},
		{"forged signature", pathJoin, fresh, 100, http.StatusUnauthorized, 100,
			func(s GuardStats) uint64 { return s.Unauthenticated }, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var src io.Reader = strings.NewReader(big)
			if tc.length >= 0 {
				src = io.LimitReader(src, tc.length)
			}
			body := &countingBody{r: src}
			r := httptest.NewRequest(http.MethodPost, tc.path, nil)
			r.Body = body
			r.ContentLength = tc.length
			tc.prep(r)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			if n := body.read.Load(); n > tc.maxRead {
				t.Fatalf("read %d bytes of the body, want at most %d", n, tc.maxRead)
			}
			if got := tc.counter(g.Stats()); got != tc.wantSeen {
				t.Fatalf("counter = %d, want %d (stats %+v)", got, tc.wantSeen, g.Stats())
			}
		})
	}
}

// A captured forward sent again is refused with a clear answer and
// counted; the command runs once.
func TestGuardRefusesReplay(t *testing.T) {
	b := &batchBackend{}
	g := NewGuard(testSecret, nil)
	h := InternalHandler(b, g)
	body, _ := json.Marshal(batchRequest{Commands: []*fsm.Command{{Op: fsm.OpHide, EntryID: "a"}}})
	out, _ := http.NewRequest(http.MethodPost, "http://x"+pathApplyBatch, nil)
	transport.SignRequest(testSecret, out, body)
	send := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, pathApplyBatch, bytes.NewReader(body))
		r.Header = out.Header.Clone()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := send(); w.Code != http.StatusOK {
		t.Fatalf("first: %d %s", w.Code, w.Body)
	}
	w := send()
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "replay") {
		t.Fatalf("replay: %d %s; want 401 naming the replay", w.Code, w.Body)
	}
	if b.calls.Load() != 1 || g.Stats().Replayed != 1 {
		t.Fatalf("calls %d, replays counted %d; want 1 and 1", b.calls.Load(), g.Stats().Replayed)
	}
	// The client signs every call afresh, so honest repeats pass.
	c, addr := serveInternal(t, h)
	for range 3 {
		if _, err := c.ApplyBatch(context.Background(), addr, []*fsm.Command{{Op: fsm.OpHide, EntryID: "a"}}); err != nil {
			t.Fatalf("honest repeat: %v", err)
		}
	}
}

// The caps hold what an honest sender sends: the largest valid post alone,
// and a batch as takeBatch builds it.
func TestBodyCapsFitHonestRequests(t *testing.T) {
	if MaxCommandBytes > MaxBatchBytes {
		t.Fatalf("MaxCommandBytes %d over MaxBatchBytes %d: a one-command batch could exceed the batch cap", MaxCommandBytes, MaxBatchBytes)
	}
	four := strings.Repeat("\U0001F600", 1) // four bytes, kept as is by JSON
	lt := strings.Repeat("<", 1)            // one byte, escaped to six
	largest := func(s string) *fsm.Command {
		return &fsm.Command{Op: fsm.OpPost, Time: time.Now().UnixNano(), Post: &fsm.PostCommand{
			Request: restarea.PostRequest{
				RequestID: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", Type: restarea.TypeReply, ParentID: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c",
				Title: strings.Repeat(s, restarea.MaxTitle*4/len(s)), Body: strings.Repeat(s, restarea.MaxBody*4/len(s)),
				Actor: restarea.Actor{Name: strings.Repeat(s, restarea.MaxName*4/len(s)), Model: strings.Repeat(s, restarea.MaxModel*4/len(s)),
					Trigger: strings.Repeat(s, restarea.MaxTrigger*4/len(s))},
				SubmissionMode: restarea.ModeAutonomous,
			},
			Source: "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", Channel: restarea.ChannelMCP,
			AttemptID: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d", NewID: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5e", ByOperator: true,
		}}
	}
	for _, s := range []string{four, lt} {
		cmd := largest(s)
		data, _ := json.Marshal(cmd)
		if len(data) > CommandSize(cmd) || CommandSize(cmd) > MaxCommandBytes {
			t.Fatalf("largest post: %d bytes of JSON, CommandSize %d, MaxCommandBytes %d", len(data), CommandSize(cmd), MaxCommandBytes)
		}
		// As many as takeBatch would put in one batch.
		var batch []*fsm.Command
		size := 0
		for len(batch) < MaxBatch && (len(batch) == 0 || size+CommandSize(cmd) <= MaxBatchBytes) {
			batch = append(batch, cmd)
			size += CommandSize(cmd)
		}
		data, _ = json.Marshal(batchRequest{Commands: batch})
		if len(data) > maxBatchBody {
			t.Fatalf("a batch of %d largest posts is %d bytes, over the %d cap", len(batch), len(data), maxBatchBody)
		}
	}
	join, _ := json.Marshal(JoinRequest{ID: strings.Repeat("n", 128), RaftAddr: strings.Repeat("h", 253) + ":65535", URL: "https://" + strings.Repeat("h", 253) + ":65535/" + strings.Repeat("p", 1024), LogFormat: 2})
	if len(join) > maxJoinBody {
		t.Fatalf("a generous join is %d bytes, over the %d cap", len(join), maxJoinBody)
	}
}

// The internal server bounds every phase of a request, so a peer dripping
// a body cannot hold a connection: with the read timeout shortened, the
// drip is cut off at it.
func TestInternalServerTimesOutSlowBody(t *testing.T) {
	srv := NewInternalServer(InternalHandler(&batchBackend{}, NewGuard(testSecret, nil)))
	if srv.ReadHeaderTimeout != InternalReadHeaderTimeout || srv.ReadTimeout != InternalReadTimeout ||
		srv.IdleTimeout != InternalIdleTimeout || srv.MaxHeaderBytes != internalMaxHeaderBytes {
		t.Fatalf("server timeouts %+v", srv)
	}
	srv.ReadTimeout = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out, _ := http.NewRequest(http.MethodPost, "http://x"+pathApplyBatch, nil)
	transport.SignRequest(testSecret, out, []byte("{}"))
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n", pathApplyBatch)
	for _, k := range []string{transport.HeaderTimestamp, transport.HeaderNonce, transport.HeaderSignature} {
		fmt.Fprintf(c, "%s: %s\r\n", k, out.Header.Get(k))
	}
	io.WriteString(c, "\r\n{")
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for time.Since(start) < 5*time.Second {
		if _, err := c.Write([]byte(" ")); err != nil {
			break
		}
		if _, err := c.Read(make([]byte, 512)); err != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("a dripping body held the connection for %v", el)
	}
}
