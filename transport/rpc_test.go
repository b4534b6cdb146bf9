package transport

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// serveRPC runs an http.Server on m's internal channel that answers
// "pong from NAME" and counts requests.
func serveRPC(t *testing.T, m *Mux, name string) *atomic.Int64 {
	t.Helper()
	var hits atomic.Int64
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			fmt.Fprintf(w, "pong from %s %s", name, r.URL.Path)
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(m.RPCListener()) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	})
	return &hits
}

func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

func TestHTTPClientReachesInternalChannel(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"plain", false}, {"mtls", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var a, b *Mux
			if tc.tls {
				p := newPKI(t)
				a, b = listen(t, p.nodeTLS("a"), 0), listen(t, p.nodeTLS("b"), 0)
			} else {
				a, b = listen(t, nil, 0), listen(t, nil, 0)
			}
			hits := serveRPC(t, a, "a")
			c := b.HTTPClient(5 * time.Second)
			defer c.CloseIdleConnections()
			for i := range 3 { // the later requests reuse a kept-alive connection
				if got, want := get(t, c, "http://"+a.Addr().String()+"/ping"), "pong from a /ping"; got != want {
					t.Fatalf("request %d: got %q, want %q", i, got, want)
				}
			}
			if hits.Load() != 3 {
				t.Fatalf("server saw %d requests, want 3", hits.Load())
			}
			if _, err := c.Get("https://" + a.Addr().String() + "/ping"); err == nil {
				t.Fatal("https URL accepted; want refusal")
			}
		})
	}
}

// expectClosed reports whether the server ends conn without sending an
// HTTP response; the read deadline only keeps a broken test from hanging.
func expectClosed(t *testing.T, conn net.Conn, what string) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err == nil {
		t.Fatalf("%s: server answered %q; want the connection closed", what, line)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: connection still open after 10s", what)
	}
}

const rawRequest = "GET /ping HTTP/1.1\r\nHost: x\r\n\r\n"

func TestMutualTLSRefusesOutsiders(t *testing.T) {
	p := newPKI(t)
	c := startCluster(t, func(i int) *tls.Config { return p.nodeTLS(fmt.Sprintf("node%d", i)) })
	target := c.nodes[0].mux
	hits := serveRPC(t, target, "n0")
	addr := target.Addr().String()
	c.replicate(t, []byte("before"))

	t.Run("tls without client certificate", func(t *testing.T) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: p.Pool(), MinVersion: tls.VersionTLS13})
		if err != nil {
			return // refused during the handshake: also fine
		}
		defer conn.Close()
		// Under TLS 1.3 the client finishes first; the refusal arrives
		// as an alert on the first read.
		conn.Write(append([]byte{kindRPC}, rawRequest...))
		expectClosed(t, conn, "no client cert")
	})
	t.Run("plain tcp", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.Write(append([]byte{kindRPC}, rawRequest...))
		expectClosed(t, conn, "plain tcp")
	})
	t.Run("certificate from another CA", func(t *testing.T) {
		outsider := listen(t, newPKI(t).nodeTLS("outsider"), 0)
		hc := outsider.HTTPClient(5 * time.Second)
		defer hc.CloseIdleConnections()
		if resp, err := hc.Get("http://" + addr + "/ping"); err == nil {
			resp.Body.Close()
			t.Fatalf("outsider got %s; want refusal", resp.Status)
		}
		// And the other direction: a member refuses to talk to a server
		// whose certificate it cannot verify.
		serveRPC(t, outsider, "outsider")
		mc := target.HTTPClient(5 * time.Second)
		defer mc.CloseIdleConnections()
		if resp, err := mc.Get("http://" + outsider.Addr().String() + "/ping"); err == nil {
			resp.Body.Close()
			t.Fatalf("member accepted an outsider's server: %s", resp.Status)
		}
	})
	if n := hits.Load(); n != 0 {
		t.Fatalf("internal handler reached %d times by outsiders", n)
	}
	c.replicate(t, []byte("after"))

	member := c.nodes[1].mux.HTTPClient(5 * time.Second)
	defer member.CloseIdleConnections()
	if got := get(t, member, "http://"+addr+"/ok"); got != "pong from n0 /ok" {
		t.Fatalf("member got %q", got)
	}
}

func TestWrongKindByteClosed(t *testing.T) {
	m := listen(t, nil, 0)
	hits := serveRPC(t, m, "m")
	for _, first := range []string{"\x00", "\x7f", "\x16", rawRequest} {
		conn, err := net.Dial("tcp", m.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(first))
		expectClosed(t, conn, fmt.Sprintf("first byte %q", first[0]))
		conn.Close()
	}
	if hits.Load() != 0 {
		t.Fatal("a wrong kind byte reached the internal handler")
	}
}

func TestSilentConnectionClosedAfterHandshakeTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"plain", false}, {"mtls", true}} {
		t.Run(tc.name, func(t *testing.T) {
			const timeout = 300 * time.Millisecond
			var a, b *Mux
			if tc.tls {
				p := newPKI(t)
				a, b = listen(t, p.nodeTLS("a"), timeout), listen(t, p.nodeTLS("b"), timeout)
			} else {
				a, b = listen(t, nil, timeout), listen(t, nil, timeout)
			}
			serveRPC(t, a, "a")
			var silent []net.Conn
			for range 10 {
				conn, err := net.Dial("tcp", a.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				silent = append(silent, conn)
			}
			start := time.Now()
			// The silent connections hold no one up: a real client gets
			// through while they are all still open.
			c := b.HTTPClient(5 * time.Second)
			defer c.CloseIdleConnections()
			if got := get(t, c, "http://"+a.Addr().String()+"/x"); got != "pong from a /x" {
				t.Fatalf("got %q", got)
			}
			for _, conn := range silent {
				expectClosed(t, conn, "silent connection")
			}
			if el := time.Since(start); el < timeout/2 {
				t.Fatalf("silent connections closed after %v, before the %v timeout", el, timeout)
			}
		})
	}
}

func TestUnacceptedConnectionDropped(t *testing.T) {
	const timeout = 300 * time.Millisecond
	a, b := listen(t, nil, timeout), listen(t, nil, timeout)
	// Nobody serves a's internal channel, so the hand-off cannot complete.
	conn, err := b.DialRPC(t.Context(), a.Addr().String())
	if err != nil {
		t.Fatalf("DialRPC: %v", err)
	}
	defer conn.Close()
	io.WriteString(conn, rawRequest)
	expectClosed(t, conn, "unaccepted connection")
}

func TestRaftLayerCloseLeavesRPCOpen(t *testing.T) {
	a, b := listen(t, nil, 0), listen(t, nil, 0)
	serveRPC(t, a, "a")
	if err := a.RaftLayer().Close(); err != nil {
		t.Fatal(err)
	}
	conn, err := b.RaftLayer().Dial(raft.ServerAddress(a.Addr().String()), time.Second)
	if err != nil {
		t.Fatalf("raft Dial: %v", err)
	}
	defer conn.Close()
	expectClosed(t, conn, "raft connection to closed raft layer")

	c := b.HTTPClient(5 * time.Second)
	defer c.CloseIdleConnections()
	if got := get(t, c, "http://"+a.Addr().String()+"/still"); !strings.HasSuffix(got, "/still") {
		t.Fatalf("got %q", got)
	}
}
