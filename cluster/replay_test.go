package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/cluster"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/transport"
)

// A forwarded apply-batch captured and sent again within its validity
// window is refused with a clear answer and counted, and it does not count
// against the original client's per-source limit a second time.
func TestReplayedForwardRefused(t *testing.T) {
	n := testnode.Start(t, testnode.WithLimits(restarea.Limit{Count: 2, WindowSeconds: 3600}, restarea.Limit{Count: 1000, WindowSeconds: 3600}),
		testnode.WithConfig(func(c *server.Config) { c.ClusterSecret = testnode.Secret }))
	mux, err := transport.Listen(transport.Config{BindAddr: "127.0.0.1:0", Secret: testnode.Secret})
	if err != nil {
		t.Fatal(err)
	}
	defer mux.Close()
	hc := mux.HTTPClient(10 * time.Second)
	defer hc.CloseIdleConnections()

	body, _ := json.Marshal(map[string]any{"commands": []*fsm.Command{forgedPost(testkit.Question("captured"))}})
	captured, _ := http.NewRequest(http.MethodPost, "http://"+n.RaftAddr()+"/internal/v1/apply-batch", nil)
	transport.SignRequest(testnode.Secret, captured, body)
	send := func() (int, string) {
		req, _ := http.NewRequest(http.MethodPost, captured.URL.String(), bytes.NewReader(body))
		req.Header = captured.Header.Clone()
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, b := send(); st != http.StatusOK || !strings.Contains(b, `"entry"`) {
		t.Fatalf("original: %d %s", st, b)
	}
	st, b := send()
	if st != http.StatusUnauthorized || !strings.Contains(b, "replay") {
		t.Fatalf("replay: %d %s; want 401 naming the replay", st, b)
	}
	if v := metric(t, n, "restarea_cluster_requests_refused_total", map[string]string{"reason": "replayed"}); v != 1 {
		t.Fatalf("replays counted: %v, want 1", v)
	}
	// The limit is 2 per source: the original and one more fit, which
	// they would not if the replay had been counted.
	peer := &cluster.Client{Internal: hc, Secret: testnode.Secret}
	ctx := context.Background()
	outs, err := peer.ApplyBatch(ctx, n.RaftAddr(), []*fsm.Command{forgedPost(testkit.Question("second"))})
	if err != nil || outs[0].Err != nil || outs[0].Result.Err != nil {
		t.Fatalf("second post from the source: %v %+v", err, outs)
	}
	outs, err = peer.ApplyBatch(ctx, n.RaftAddr(), []*fsm.Command{forgedPost(testkit.Question("third"))})
	if err != nil {
		t.Fatal(err)
	}
	code := restarea.ErrorCode(outs[0].Err)
	if outs[0].Result != nil && outs[0].Result.Err != nil {
		code = outs[0].Result.Err.Code
	}
	if code != restarea.CodeRateLimited {
		t.Fatalf("third post from the source: %+v, want rate_limited", outs[0])
	}
}
