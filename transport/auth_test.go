package transport

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/restarea/restarea/internal/testkit"
)

var (
	clusterSecret = []byte("transport-test-cluster-secret-1")
	otherSecret   = []byte("transport-test-someone-else-s-2")
)

// listenAuth opens a Mux like listen, with a cluster secret and options.
func listenAuth(t *testing.T, secret []byte, tlsCfg *tls.Config, handshake time.Duration, maxPending int) *Mux {
	t.Helper()
	m, err := Listen(Config{
		BindAddr:         "127.0.0.1:0",
		Secret:           secret,
		TLS:              tlsCfg,
		Logger:           testLogger(t),
		HandshakeTimeout: handshake,
		MaxPending:       maxPending,
	})
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// acceptOne returns what a's raft layer accepts within d (nil if nothing).
func acceptOne(a *Mux, d time.Duration) <-chan net.Conn {
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := a.RaftLayer().Accept()
		if err != nil {
			ch <- nil
			return
		}
		ch <- c
	}()
	out := make(chan net.Conn, 1)
	go func() {
		select {
		case c := <-ch:
			out <- c
		case <-time.After(d):
			out <- nil
		}
	}()
	return out
}

// Nodes with the same secret reach each other on both kinds, with and
// without TLS, and bytes written right after Dial arrive intact.
func TestAuthenticatedConnections(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"plain", false}, {"mtls", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var ta, tb *tls.Config
			if tc.tls {
				p := newPKI(t)
				ta, tb = p.nodeTLS("a"), p.nodeTLS("b")
			}
			a := listenAuth(t, clusterSecret, ta, time.Second, 0)
			b := listenAuth(t, clusterSecret, tb, time.Second, 0)
			serveRPC(t, a, "a")
			roundTrip(t, a, b, "a")
			if s := a.Stats(); s.Refused[RefusedAuth] != 0 || s.Refused[RefusedProtocol] != 0 || s.Pending != 0 {
				t.Fatalf("stats after good connections: %+v", s)
			}
		})
	}
}

// A node with another secret can neither open a connection nor get one
// accepted; both sides count it.
func TestWrongSecretRefused(t *testing.T) {
	a := listenAuth(t, clusterSecret, nil, time.Second, 0)
	b := listenAuth(t, otherSecret, nil, time.Second, 0)
	got := acceptOne(a, time.Second)
	_, err := b.RaftLayer().Dial(raft.ServerAddress(a.Addr().String()), 2*time.Second)
	var op *net.OpError
	if err == nil || !errors.As(err, &op) || op.Op != "dial" {
		t.Fatalf("Dial with the wrong secret: %v; want a dial error", err)
	}
	if !strings.Contains(err.Error(), "cluster-secret") {
		t.Fatalf("error does not say why: %v", err)
	}
	if c := <-got; c != nil {
		c.Close()
		t.Fatal("a connection with the wrong secret was accepted")
	}
	if _, err := b.DialRPC(t.Context(), a.Addr().String()); err == nil {
		t.Fatal("internal channel opened with the wrong secret")
	}
	if n := a.Stats().Refused[RefusedAuth]; n != 2 {
		t.Fatalf("acceptor counted %d auth refusals, want 2", n)
	}
	if n := b.Stats().DialAuthFailed; n != 2 {
		t.Fatalf("dialer counted %d failed dials, want 2", n)
	}
}

// A peer without the secret (an earlier version, a forged raft client)
// sends raft or HTTP bytes right after the kind byte: refused at once,
// before the handshake deadline, and nothing reaches raft or HTTP.
func TestNoGreetingRefused(t *testing.T) {
	a := listenAuth(t, clusterSecret, nil, time.Minute, 0)
	hits := serveRPC(t, a, "a")
	got := acceptOne(a, time.Second)
	for _, first := range []string{"\x01\x00\x83\xa4Term", "\x02" + rawRequest, "\x01RAU"} {
		conn, err := net.Dial("tcp", a.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(first))
		if first == "\x01RAU" {
			conn.(*net.TCPConn).CloseWrite() // a truncated greeting
		}
		start := time.Now()
		expectClosed(t, conn, "no greeting")
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("closed after %v; want at once", el)
		}
		conn.Close()
	}
	// A Mux without a secret speaks the old protocol.
	old := listen(t, nil, time.Second)
	conn, err := old.RaftLayer().Dial(raft.ServerAddress(a.Addr().String()), time.Second)
	if err == nil {
		conn.Write([]byte{0, 1, 2, 3})
		expectClosed(t, conn, "old-protocol dialer")
		conn.Close()
	}
	if c := <-got; c != nil {
		c.Close()
		t.Fatal("raft accepted an unauthenticated connection")
	}
	if hits.Load() != 0 {
		t.Fatal("the internal handler saw an unauthenticated request")
	}
	s := a.Stats()
	if s.Refused[RefusedProtocol] != 3 || s.Refused[RefusedIO] != 1 {
		t.Fatalf("refusals %v; want 3 protocol, 1 io", s.Refused)
	}
}

// A dialer checks the acceptor: an impostor that plays the protocol without
// the secret gets a proof from the dialer but never a byte of raft data,
// and the dial fails.
func TestImpostorAcceptorGetsNoData(t *testing.T) {
	imp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Close()
	after := make(chan []byte, 1)
	go func() {
		c, err := imp.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		hello := make([]byte, 1+helloV2Size)
		if _, err := io.ReadFull(c, hello); err != nil {
			after <- nil
			return
		}
		nonce := make([]byte, nonceSize)
		rand.Read(nonce)
		c.Write(Identity{}.appendTo(append([]byte{0, ProtocolMax, 0, ProtocolMin, 0, ProtocolMax}, nonce...))) // a well-played version-2 answer
		io.ReadFull(c, make([]byte, proofSize))
		fake := make([]byte, proofSize)
		rand.Read(fake)
		c.Write(fake)
		rest, _ := io.ReadAll(c)
		after <- rest
	}()
	b := listenAuth(t, clusterSecret, nil, time.Second, 0)
	conn, err := b.RaftLayer().Dial(raft.ServerAddress(imp.Addr().String()), 2*time.Second)
	if err == nil {
		conn.Write([]byte("raft data"))
		conn.Close()
		t.Fatal("Dial accepted an acceptor without the secret")
	}
	if rest := <-after; len(rest) != 0 {
		t.Fatalf("the impostor received %q after the handshake", rest)
	}
	if b.Stats().DialAuthFailed != 1 {
		t.Fatalf("DialAuthFailed = %d", b.Stats().DialAuthFailed)
	}
}

// Raft-kind connections that never finish the handshake are closed at the
// handshake deadline; at most MaxPending are held at once, the rest closed
// on arrival; the gauge and counters say so, and the port works after.
func TestPendingConnectionsBoundedAndTimedOut(t *testing.T) {
	const timeout, maxPending = 500 * time.Millisecond, 16
	a := listenAuth(t, clusterSecret, nil, timeout, maxPending)
	b := listenAuth(t, clusterSecret, nil, time.Second, 0)
	var held []net.Conn
	for range maxPending {
		c, err := net.Dial("tcp", a.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(append([]byte{kindRaft}, authMagic[:]...)) // then silence
		held = append(held, c)
	}
	// Within half the handshake timeout, before the first are cut off.
	testkit.Poll(context.Background(), timeout/2, func() error {
		if a.Stats().Pending < maxPending {
			return errors.New("pending")
		}
		return nil
	})
	if p := a.Stats().Pending; p != maxPending {
		t.Fatalf("Pending = %d, want %d", p, maxPending)
	}
	extra, err := net.Dial("tcp", a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	expectClosed(t, extra, "connection over MaxPending")
	for _, c := range held {
		expectClosed(t, c, "silent raft connection")
	}
	s := a.Stats()
	if s.Pending != 0 || s.Refused[RefusedTimeout] != maxPending || s.Refused[RefusedCapacity] != 1 {
		t.Fatalf("stats %+v; want 0 pending, %d timeouts, 1 over capacity", s, maxPending)
	}
	got := acceptOne(a, 5*time.Second)
	conn, err := b.RaftLayer().Dial(raft.ServerAddress(a.Addr().String()), 2*time.Second)
	if err != nil {
		t.Fatalf("Dial after the flood: %v", err)
	}
	conn.Close()
	if c := <-got; c == nil {
		t.Fatal("nothing accepted after the flood")
	} else {
		c.Close()
	}
}

// Without TLS or a secret the port may not reach beyond loopback.
func TestListenRefusesExposedPortWithoutAuthentication(t *testing.T) {
	for _, bind := range []string{"0.0.0.0:0", "[::]:0", ":0", "192.0.2.1:0"} {
		m, err := Listen(Config{BindAddr: bind})
		if err == nil {
			m.Close()
			t.Fatalf("Listen(%s) without TLS or secret succeeded", bind)
		}
		if !strings.Contains(err.Error(), "loopback") {
			t.Fatalf("Listen(%s): %v; want it to say why", bind, err)
		}
	}
	for _, bind := range []string{"127.0.0.1:0", "localhost:0", "127.0.0.2:0"} {
		m, err := Listen(Config{BindAddr: bind})
		if err != nil {
			if bind == "127.0.0.2:0" && !bytes.Contains([]byte(err.Error()), []byte("loopback")) {
				continue // some systems route only 127.0.0.1
			}
			t.Fatalf("Listen(%s): %v", bind, err)
		}
		m.Close()
	}
}
