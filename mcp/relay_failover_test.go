package mcp

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/restarea/restarea/internal/testkit"
)

// silent is a server that accepts TCP connections and reads requests but
// never answers, as a hung node or a stuck proxy does. It counts the
// connections it accepted.
func silent(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + l.Addr().String(), &n
}

// relayWith connects a client in process to a relay of servers with cfg
// and returns the relay too.
func relayWith(t *testing.T, servers []string, cfg RelayConfig) (*sdk.ClientSession, *relay) {
	t.Helper()
	srv, r := newRelay(servers, cfg)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(testCtx(t), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(testCtx(t), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, r
}

// TestRelaySilentServers: two servers that accept connections but never
// answer cost about two handshake timeouts, not two call timeouts; they
// are then skipped until DeadFor has passed, and tried again after it.
func TestRelaySilentServers(t *testing.T) {
	live := strings.TrimSuffix(serve(t, Config{Service: testkit.NewFakeService()}), "/mcp")
	s1, hits1 := silent(t)
	s2, hits2 := silent(t)
	const connect = 400 * time.Millisecond
	const deadFor = 2 * time.Second
	cs, r := relayWith(t, []string{s1, s2, live}, RelayConfig{AttemptTimeout: 20 * time.Second, ConnectTimeout: connect, DeadFor: deadFor, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})

	start := time.Now()
	got := call(t, cs, ToolListThreads, map[string]any{})
	took := time.Since(start)
	if got.HTTPStatus != 200 {
		t.Fatalf("list_threads through the relay: %s", got.Text)
	}
	if hits1.Load() == 0 || hits2.Load() == 0 {
		t.Fatalf("the silent servers were not tried (%d, %d connections)", hits1.Load(), hits2.Load())
	}
	// Two handshake timeouts, plus the live call; far below the 20 s
	// attempt timeout (45 s by default) each silent server used to cost.
	if took < 2*connect || took > 2*connect+3*time.Second {
		t.Errorf("first call took %s, want about %s", took, 2*connect)
	}
	t.Logf("first call past two silent servers: %s", took)

	// Now the live server is preferred and the silent ones are dead: the
	// next call goes straight to it, with no new connection to them.
	before1, before2 := hits1.Load(), hits2.Load()
	start = time.Now()
	if got := call(t, cs, ToolListThreads, map[string]any{}); got.HTTPStatus != 200 {
		t.Fatalf("second call: %s", got.Text)
	}
	if took := time.Since(start); took > connect {
		t.Errorf("second call took %s; the dead servers were waited on", took)
	}
	if hits1.Load() != before1 || hits2.Load() != before2 {
		t.Error("the second call went to a server known dead")
	}
	order := r.order()
	if order[0] != 2 {
		t.Errorf("order %v, want the live server (2) first", order)
	}

	// After DeadFor the silent servers take their turn again.
	r.preferred.Store(0)
	if o := r.order(); o[0] != 2 || len(o) != 3 {
		t.Errorf("while dead, order %v still starts with the live server", o)
	}
	time.Sleep(deadFor + 100*time.Millisecond)
	if o := r.order(); o[0] != 0 || o[1] != 1 || o[2] != 2 {
		t.Errorf("after DeadFor, order %v, want [0 1 2]", o)
	}
	start = time.Now()
	if got := call(t, cs, ToolListThreads, map[string]any{}); got.HTTPStatus != 200 {
		t.Fatalf("third call: %s", got.Text)
	}
	if hits1.Load() == before1 {
		t.Error("a server whose dead time passed was not retried")
	}
	t.Logf("call retrying both silent servers: %s", time.Since(start))
}

// TestRelayOrder checks the try order: the preferred server first, then
// round the list, with servers known dead moved to the end in that
// order.
func TestRelayOrder(t *testing.T) {
	r := &relay{endpoints: []string{"a", "b", "c", "d"}, deadUntil: make([]atomic.Int64, 4)}
	r.preferred.Store(2)
	if o := r.order(); mustJSON(o) != "[2,3,0,1]" {
		t.Errorf("order %v", o)
	}
	r.deadUntil[3].Store(time.Now().Add(time.Hour).UnixNano())
	r.deadUntil[2].Store(time.Now().Add(time.Hour).UnixNano())
	r.deadUntil[1].Store(time.Now().Add(-time.Second).UnixNano()) // expired
	if o := r.order(); mustJSON(o) != "[0,1,2,3]" {
		t.Errorf("order with 2 and 3 dead: %v, want [0,1,2,3]", o)
	}
	r.answered(3)
	if o := r.order(); mustJSON(o) != "[3,0,1,2]" {
		t.Errorf("after 3 answered: %v, want [3,0,1,2]", o)
	}
}
