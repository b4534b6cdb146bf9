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
	"net/netip"
	"sync"
	"time"
)

// Kind bytes. They are neither a TLS record type (20–24) nor a printable
// character, so a stray TLS or HTTP client on a plain port is refused at once.
const (
	kindRaft byte = 1
	kindRPC  byte = 2
)

// Mux owns a node's cluster port and splits accepted connections between the
// raft layer and the internal RPC listener. It is safe for concurrent use.
type Mux struct {
	cfg    Config
	ln     net.Listener
	adv    net.Addr
	srvTLS *tls.Config // nil when plain TCP
	auth   *connAuth   // nil without a cluster secret
	log    *slog.Logger
	count  counters
	warned rateLimit // for refusals worth an operator's attention
	// v1 remembers the peers that speak only protocol version 1, so a dial
	// does not probe them with version 2 every time.
	v1 *v1Peers

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
	pending map[net.Conn]netip.Prefix // accepted, handshake not finished, by source; at most cfg.MaxPending
	// fromSource counts the pending connections of each source; at most
	// cfg.MaxPendingPerSource each.
	fromSource map[netip.Prefix]int
}

// Listen opens the port described by cfg and starts accepting. Accepted
// connections reach RaftLayer().Accept or RPCListener().Accept only after TLS
// (if configured), a valid kind byte and, with a secret, the mutual proof of
// it, all within cfg.HandshakeTimeout. It fails if the port cannot be bound,
// if the advertise address would be undialable (for example 0.0.0.0), or if
// the port would reach beyond loopback with neither TLS nor a secret.
func Listen(cfg Config) (*Mux, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := cfg.checkExposure(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.BindAddr)
	if err != nil {
		return nil, fmt.Errorf("transport: listen %s: %w", cfg.BindAddr, err)
	}
	if cfg.exposedListener(ln.Addr()) {
		ln.Close()
		return nil, errExposed(ln.Addr().String())
	}
	adv, err := advertised(cfg.AdvertiseAddr, ln.Addr())
	if err != nil {
		ln.Close()
		return nil, err
	}
	m := &Mux{
		cfg:        cfg,
		ln:         ln,
		adv:        adv,
		auth:       newConnAuth(cfg.Secret, cfg.Versions, cfg.legacyV1),
		v1:         newV1Peers(cfg.now),
		log:        cfg.Logger.With("component", "transport"),
		raft:       newSubListener(adv),
		rpc:        newSubListener(adv),
		done:       make(chan struct{}),
		pending:    make(map[net.Conn]netip.Prefix),
		fromSource: make(map[netip.Prefix]int),
	}
	if cfg.TLS != nil {
		m.srvTLS = serverTLS(cfg.TLS)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsUnspecified() {
		m.dialFrom = &net.TCPAddr{IP: tcp.IP}
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && cfg.TLS == nil && !tcp.IP.IsLoopback() {
		// Every connection is authenticated, but its bytes travel in the
		// clear and unprotected once the handshake is over.
		m.log.Info("cluster port reachable beyond loopback without TLS: connections are authenticated by the cluster secret but not encrypted", "bind", ln.Addr().String())
	}
	m.wg.Add(1)
	go m.acceptLoop()
	m.log.Info("cluster port open", "bind", ln.Addr().String(), "advertise", adv.String(), "tls", cfg.TLS != nil, "authenticated", m.auth != nil)
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
// It refuses when closed, over MaxPending, or over MaxPendingPerSource for
// the connection's source, so that one address cannot hold every slot.
func (m *Mux) track(c net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	src := sourceOf(c.RemoteAddr())
	switch {
	case len(m.pending) >= m.cfg.MaxPending:
		m.count.refuse(RefusedCapacity)
		if m.warned.allow(RefusedCapacity) {
			m.log.Warn("too many connections in handshake; refusing", "remote", c.RemoteAddr().String(), "max_pending", m.cfg.MaxPending)
		}
		return false
	case m.fromSource[src] >= m.cfg.MaxPendingPerSource:
		m.count.refuse(RefusedSource)
		if m.warned.allow(RefusedSource) {
			m.log.Warn("too many connections in handshake from one source; refusing", "remote", c.RemoteAddr().String(),
				"source", src.String(), "max_pending_per_source", m.cfg.MaxPendingPerSource)
		}
		return false
	}
	m.pending[c] = src
	m.fromSource[src]++
	m.wg.Add(1) // safe: the accept loop's own count keeps the group above zero
	return true
}

func (m *Mux) untrack(c net.Conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	src, ok := m.pending[c]
	if !ok {
		return // Close took the pending set
	}
	delete(m.pending, c)
	if m.fromSource[src]--; m.fromSource[src] <= 0 {
		delete(m.fromSource, src)
	}
}

// sourceOf is what the per-source cap counts by: an IPv4 address, or the
// /64 of an IPv6 one (one host commonly holds a whole /64).
func sourceOf(a net.Addr) netip.Prefix {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Prefix{}
	}
	ip := ap.Addr().Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
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
	conn, kind, version, err := m.identify(raw, deadline)
	// From here Close no longer needs to cut the connection off: the hand-off
	// below watches the sub-listener, which Close closes.
	m.untrack(raw)
	if err != nil {
		m.refused(remote, kind, err) // counted before the peer can see the close
		raw.Close()
		return
	}
	sub := m.rpc
	if kind == kindRaft {
		sub = m.raft
	}
	if conn, err = m.cfg.Faults.wrap(conn); err != nil {
		return
	}
	if sub.deliver(conn, deadline) {
		if m.auth != nil {
			m.count.establish(DirectionIn, version)
		}
	} else {
		if !sub.isClosed() {
			m.count.refuse(RefusedUnaccepted)
			m.log.Warn("connection dropped: nobody accepting", "remote", remote, "kind", kind)
		}
		conn.Close()
	}
}

// identify finishes TLS (if configured), reads the kind byte and, with a
// secret, runs the mutual proof, all before deadline; then it clears the
// deadline so the acceptor starts with none. kind is 0 until known;
// version is the protocol version negotiated (0 without a secret).
func (m *Mux) identify(raw net.Conn, deadline time.Time) (net.Conn, byte, uint16, error) {
	if err := raw.SetDeadline(deadline); err != nil {
		return nil, 0, 0, err
	}
	conn := raw
	if m.srvTLS != nil {
		tc := tls.Server(raw, m.srvTLS)
		if err := tc.Handshake(); err != nil {
			return nil, 0, 0, &tlsError{err}
		}
		conn = tc
	}
	var b [1]byte
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		return nil, 0, 0, fmt.Errorf("read kind byte: %w", err)
	}
	kind := b[0]
	if kind != kindRaft && kind != kindRPC {
		return nil, 0, 0, &refusal{reason: RefusedProtocol, msg: fmt.Sprintf("unknown kind byte %#x", kind)}
	}
	var version uint16
	if m.auth != nil {
		binding, err := tlsBinding(conn)
		if err != nil {
			return nil, kind, 0, err
		}
		if version, _, err = m.auth.accept(conn, kind, binding, m.identity()); err != nil {
			return nil, kind, 0, err
		}
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		return nil, kind, 0, err
	}
	return conn, kind, version, nil
}

// tlsError marks a failed TLS handshake, which is worth an operator's
// attention (wrong CA, missing client certificate) more than a silent probe.
type tlsError struct{ err error }

func (e *tlsError) Error() string { return "tls handshake: " + e.err.Error() }
func (e *tlsError) Unwrap() error { return e.err }

// refused counts and logs a connection closed in its handshake. Failed
// proofs and TLS handshakes are what a misconfigured peer (or an attacker)
// produces, so they are logged at warn, at most once per reason every
// refusalLogEvery, with the number left unlogged; silent probes and
// hang-ups only at debug.
func (m *Mux) refused(remote string, kind byte, err error) {
	if m.isClosed() {
		return
	}
	reason := reasonOf(err)
	m.count.refuse(reason)
	var rf *refusal
	switch {
	case reason == RefusedLineage && errors.As(err, &rf):
		m.stale(rf)
		if n, ok := m.warned.allowCount(reason); ok {
			m.log.Error("connection refused by the lineage fence", "remote", remote, "kind", kind, "reason", reason, "err", err, "also_refused_unlogged", n)
		}
	case reason == RefusedVersion && errors.As(err, &rf):
		if n, ok := m.warned.allowCount(reason); ok {
			m.log.Warn(rf.logLine(remote), "remote", remote, "kind", kind, "reason", reason, "also_refused_unlogged", n)
		}
	case (reason == RefusedAuth || reason == RefusedTLS || (reason == RefusedProtocol && kind != 0)) && !errors.Is(err, io.EOF):
		if n, ok := m.warned.allowCount(reason); ok {
			m.log.Warn("connection refused", "remote", remote, "kind", kind, "reason", reason, "err", err, "also_refused_unlogged", n)
		}
	default:
		m.log.Debug("connection refused", "remote", remote, "kind", kind, "reason", reason, "err", err)
	}
}

// identity is this node's Identity for one handshake.
func (m *Mux) identity() Identity {
	if m.cfg.Identity == nil {
		return Identity{}
	}
	return m.cfg.Identity()
}

// stale tells OnStale when the fence found this node's own data stale.
func (m *Mux) stale(rf *refusal) {
	if rf.stale != nil && rf.stale.Verdict == VerdictSelfStale && m.cfg.OnStale != nil {
		m.cfg.OnStale(rf.stale)
	}
}
