package transport

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestCloseUnblocksAccept(t *testing.T) {
	m := listen(t, nil, 0)
	listeners := map[string]net.Listener{"raft": m.RaftLayer(), "rpc": m.RPCListener()}
	errs := make(chan error, len(listeners))
	for _, l := range listeners {
		go func() {
			_, err := l.Accept()
			errs <- err
		}()
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for range listeners {
		select {
		case err := <-errs:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Accept returned %v; want net.ErrClosed", err)
			}
		case <-timeout.C:
			t.Fatal("Accept still blocked after Close")
		}
	}
	for name, l := range listeners {
		if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("%s Accept after Close: %v", name, err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := net.Dial("tcp", m.Addr().String()); err == nil {
		t.Fatal("port still accepting after Close")
	}
	if _, err := m.DialRPC(t.Context(), "127.0.0.1:1"); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("DialRPC after Close: %v", err)
	}
}

func TestCloseCutsPendingHandshakes(t *testing.T) {
	m := listen(t, nil, time.Minute)
	conn, err := net.Dial("tcp", m.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A byte-less connection would otherwise be held for a minute; Close
	// must not wait for it (and, by returning, shows its goroutine ended).
	done := make(chan error, 1)
	go func() { done <- m.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited on a pending handshake")
	}
	expectClosed(t, conn, "pending connection")
}

func TestDialHonoursTimeoutAndCancel(t *testing.T) {
	// A peer that accepts TCP but never speaks TLS.
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 8)
	go func() {
		for range cap(accepted) {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		mute.Close()
		for {
			select {
			case c := <-accepted:
				c.Close()
			default:
				return
			}
		}
	})

	m := listen(t, newPKI(t).nodeTLS("a"), 0)
	start := time.Now()
	_, err = m.RaftLayer().Dial(raft.ServerAddress(mute.Addr().String()), 200*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Dial against a mute peer: %v; want a timeout", err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("Dial took %v with a 200ms timeout", el)
	}
	(<-accepted).Close()

	// Cancel once the peer has accepted, i.e. while the TLS handshake is
	// blocked; cancellation must end it long before the 5s handshake
	// timeout would.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	held := make(chan net.Conn, 1)
	go func() {
		c := <-accepted
		cancel()
		held <- c
	}()
	start = time.Now()
	if _, err := m.DialRPC(ctx, mute.Addr().String()); !errors.Is(err, context.Canceled) {
		t.Fatalf("DialRPC with cancelled context: %v", err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("cancelled DialRPC took %v", el)
	}
	(<-held).Close()
}

func TestAdvertiseAddress(t *testing.T) {
	if _, err := Listen(Config{BindAddr: "127.0.0.1:0", AdvertiseAddr: "0.0.0.0:8300"}); err == nil {
		t.Fatal("unspecified advertise address accepted")
	}
	if _, err := advertised("", &net.TCPAddr{IP: net.IPv4zero, Port: 8300}); err == nil {
		t.Fatal("unspecified listener address accepted as advertise address")
	}
	if _, err := advertised("", &net.TCPAddr{IP: net.IPv6unspecified, Port: 8300}); err == nil {
		t.Fatal("[::] accepted as advertise address")
	}
	for _, bad := range []string{"node1", "node1:0", ":8300", "node1:http"} {
		if _, err := advertised(bad, nil); err == nil {
			t.Fatalf("advertise address %q accepted", bad)
		}
	}
	m, err := Listen(Config{BindAddr: "127.0.0.1:0", AdvertiseAddr: "node1.internal:8300"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.Addr().String(); got != "node1.internal:8300" {
		t.Fatalf("Addr() = %q", got)
	}
	if got := m.RaftLayer().Addr().String(); got != "node1.internal:8300" {
		t.Fatalf("RaftLayer().Addr() = %q", got)
	}
	if _, err := Listen(Config{}); err == nil {
		t.Fatal("empty BindAddr accepted")
	}
}
