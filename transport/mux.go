// Package transport gives a node one TCP port that carries both raft traffic
// and the internal node-to-node channel (write forwarding, joins), with
// optional mutual TLS. The first byte a dialer sends (inside TLS when TLS is
// on) says which of the two a connection is for; see DESIGN.md.
package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Kind bytes. They are neither a TLS record type (20–24) nor a printable
// character, so a stray TLS or HTTP client on a plain port is refused at once.
const (
	kindRaft byte = 1
	kindRPC  byte = 2
)

// maxPending caps connections still in their handshake, so a flood of silent
// connections costs bounded memory; each one also ends at its deadline.
const maxPending = 1024

// Mux owns a node's cluster port and splits accepted connections between the
// raft layer and the internal RPC listener. It is safe for concurrent use.
type Mux struct {
	cfg    Config
	ln     net.Listener
	adv    net.Addr
	srvTLS *tls.Config // nil when plain TCP
	log    *slog.Logger

	raft *subListener
	rpc  *subListener
	// dialFrom is the source address of outgoing connections: the bind IP
	// when it is a specific one, so a node on a multi-homed host (or on
	// its own loopback address) speaks from the address it listens on.
	dialFrom net.Addr

	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup // the accept loop and every handshake goroutine

	mu      sync.Mutex
	closed  bool
	pending map[net.Conn]struct{} // accepted, kind not yet known
}

// Listen opens the port described by cfg and starts accepting. Accepted
// connections reach RaftLayer().Accept or RPCListener().Accept only after TLS
// (if configured) and a valid kind byte, all within cfg.HandshakeTimeout.
// It fails if the port cannot be bound or the advertise address would be
// undialable (for example 0.0.0.0).
func Listen(cfg Config) (*Mux, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.BindAddr)
	if err != nil {
		return nil, fmt.Errorf("transport: listen %s: %w", cfg.BindAddr, err)
	}
	adv, err := advertised(cfg.AdvertiseAddr, ln.Addr())
	if err != nil {
		ln.Close()
		return nil, err
	}
	m := &Mux{
		cfg:     cfg,
		ln:      ln,
		adv:     adv,
		log:     cfg.Logger.With("component", "transport"),
		raft:    newSubListener(adv),
		rpc:     newSubListener(adv),
		done:    make(chan struct{}),
		pending: make(map[net.Conn]struct{}),
	}
	if cfg.TLS != nil {
		m.srvTLS = serverTLS(cfg.TLS)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsUnspecified() {
		m.dialFrom = &net.TCPAddr{IP: tcp.IP}
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && cfg.TLS == nil && !tcp.IP.IsLoopback() {
		// Raft itself has no authentication; only mutual TLS keeps
		// strangers from speaking it on a reachable port.
		m.log.Warn("cluster port reachable beyond loopback without TLS: raft traffic is unauthenticated", "bind", ln.Addr().String())
	}
	m.wg.Add(1)
	go m.acceptLoop()
	m.log.Info("cluster port open", "bind", ln.Addr().String(), "advertise", adv.String(), "tls", cfg.TLS != nil)
	return m, nil
}

// Addr returns the advertised address: what peers dial and what raft records
// for this node.
func (m *Mux) Addr() net.Addr { return m.adv }

// Close stops the port: the listener closes, pending handshakes are cut off,
// and Accept on both sub-listeners returns an error satisfying
// errors.Is(err, net.ErrClosed). Connections already handed to an acceptor
// are theirs to close. Close waits for the Mux's goroutines to end, is
// idempotent, and returns the listener's close error from the first call.
func (m *Mux) Close() error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		pending := m.pending
		m.pending = nil
		m.mu.Unlock()

		close(m.done)
		m.closeErr = m.ln.Close()
		m.raft.Close()
		m.rpc.Close()
		for c := range pending {
			c.Close()
		}
		m.wg.Wait()
		m.log.Info("cluster port closed", "advertise", m.adv.String())
	})
	return m.closeErr
}

func (m *Mux) acceptLoop() {
	defer m.wg.Done()
	var delay time.Duration
	for {
		conn, err := m.ln.Accept()
		if err != nil {
			if m.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient errors such as EMFILE: back off so they do not spin
			// the loop, but stay responsive to Close.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			m.log.Warn("accept failed", "err", err, "retry_in", delay)
			t := time.NewTimer(delay)
			select {
			case <-m.done:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		delay = 0
		if !m.track(conn) {
			conn.Close()
			continue
		}
		go m.handshake(conn)
	}
}

// track records an accepted connection as pending and counts its goroutine.
// It refuses when closed or over maxPending.
func (m *Mux) track(c net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	if len(m.pending) >= maxPending {
		m.log.Warn("too many connections in handshake; refusing", "remote", c.RemoteAddr().String())
		return false
	}
	m.pending[c] = struct{}{}
	m.wg.Add(1) // safe: the accept loop's own count keeps the group above zero
	return true
}

func (m *Mux) untrack(c net.Conn) {
	m.mu.Lock()
	delete(m.pending, c)
	m.mu.Unlock()
}

func (m *Mux) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// handshake runs in its own goroutine per accepted connection, so a slow or
// silent peer delays nobody else; a single deadline bounds all of it.
func (m *Mux) handshake(raw net.Conn) {
	defer m.wg.Done()
	remote := raw.RemoteAddr().String()
	deadline := time.Now().Add(m.cfg.HandshakeTimeout)
	conn, kind, err := m.identify(raw, deadline)
	// From here Close no longer needs to cut the connection off: the hand-off
	// below watches the sub-listener, which Close closes.
	m.untrack(raw)
	if err != nil {
		raw.Close()
		m.logRefusal(remote, err)
		return
	}
	var sub *subListener
	switch kind {
	case kindRaft:
		sub = m.raft
	case kindRPC:
		sub = m.rpc
	default:
		conn.Close()
		m.log.Debug("connection refused: unknown kind byte", "remote", remote, "kind", kind)
		return
	}
	if conn, err = m.cfg.Faults.wrap(conn); err != nil {
		return
	}
	if !sub.deliver(conn, deadline) {
		conn.Close()
		if !sub.isClosed() {
			m.log.Warn("connection dropped: nobody accepting", "remote", remote, "kind", kind)
		}
	}
}

// identify finishes TLS (if configured) and reads the kind byte before
// deadline, then clears the deadline so the acceptor starts with none.
func (m *Mux) identify(raw net.Conn, deadline time.Time) (net.Conn, byte, error) {
	if err := raw.SetDeadline(deadline); err != nil {
		return nil, 0, err
	}
	conn := raw
	if m.srvTLS != nil {
		tc := tls.Server(raw, m.srvTLS)
		if err := tc.Handshake(); err != nil {
			return nil, 0, &tlsError{err}
		}
		conn = tc
	}
	var b [1]byte
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		return nil, 0, fmt.Errorf("read kind byte: %w", err)
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		return nil, 0, err
	}
	return conn, b[0], nil
}

// tlsError marks a failed TLS handshake, which is worth an operator's
// attention (wrong CA, missing client certificate) more than a silent probe.
type tlsError struct{ err error }

func (e *tlsError) Error() string { return "tls handshake: " + e.err.Error() }
func (e *tlsError) Unwrap() error { return e.err }

func (m *Mux) logRefusal(remote string, err error) {
	var te *tlsError
	var ne net.Error
	switch {
	case m.isClosed():
	case errors.As(err, &ne) && ne.Timeout():
		m.log.Debug("connection refused: handshake timeout", "remote", remote)
	case errors.As(err, &te) && !errors.Is(err, io.EOF):
		m.log.Info("connection refused", "remote", remote, "err", err)
	default:
		m.log.Debug("connection refused", "remote", remote, "err", err)
	}
}
