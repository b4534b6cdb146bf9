package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// aLongTimeAgo is a deadline in the past; setting it makes blocked I/O on a
// socket return at once, which is how context cancellation reaches a
// handshake in progress.
var aLongTimeAgo = time.Unix(1, 0)

// DialRPC connects to the internal channel of the node at addr (its
// advertised host:port). The dial, the TLS handshake (verifying the peer
// against the cluster CA), the kind byte and, with a secret, the mutual
// proof of it all finish within ctx, or within the handshake timeout when
// ctx has no deadline. The returned connection has
// no deadline set. It fails once the Mux is closed.
func (m *Mux) DialRPC(ctx context.Context, addr string) (net.Conn, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.cfg.HandshakeTimeout)
		defer cancel()
	}
	return m.dial(ctx, addr, kindRPC)
}

// RaftLayer returns the stream layer to give raft.NewNetworkTransport. Its
// Accept yields only raft connections that passed the handshake (TLS and the
// secret's proof as configured); its Dial opens a raft connection to a peer
// within the timeout raft passes (TLS and proof included), and only to a
// peer that proved the secret; its Addr is the
// advertised address, which raft uses as this node's address. Closing it
// (raft does so on shutdown) stops raft traffic only; the Mux stays open
// until Mux.Close. The same value is returned on every call.
func (m *Mux) RaftLayer() raft.StreamLayer { return raftLayer{m.raft, m} }

// RPCListener returns the listener for the internal channel, to serve an
// http.Server on. Its Accept yields only connections that passed TLS (when
// configured), sent the internal-channel kind byte and, with a secret,
// proved it. Closing it stops the
// internal channel only.
func (m *Mux) RPCListener() net.Listener { return m.rpc }

type raftLayer struct {
	*subListener
	m *Mux
}

// Dial opens a raft connection to address within timeout; a timeout of zero
// or less means the Mux's handshake timeout, so a dead peer cannot hang
// raft's replication goroutine.
func (r raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if timeout <= 0 {
		timeout = r.m.cfg.HandshakeTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return r.m.dial(ctx, string(address), kindRaft)
}

// dial opens a connection of the given kind. ctx bounds only the setup; the
// connection outlives it. Every failure is a *net.OpError with Op "dial":
// nothing was sent over a connection that was never returned.
func (m *Mux) dial(ctx context.Context, address string, kind byte) (net.Conn, error) {
	fail := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: addr(address), Err: &setupError{err}}
	}
	if m.isClosed() {
		return nil, fail(net.ErrClosed)
	}
	if m.cfg.Faults.Isolated() {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ErrIsolated}
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fail(err)
	}
	// Offer version 2 unless this peer was found to speak only version 1
	// lately (or this node speaks only 1). A peer of release v0.1.0 closes
	// the connection at a version-2 greeting; then greet it with version 1
	// on a new connection, and remember for a while that it speaks only 1.
	offer := uint16(2)
	if m.auth == nil || m.auth.legacy || m.cfg.Versions.Max < 2 || m.v1.speaksV1Only(address) {
		offer = 1
	}
	conn, version, err := m.attempt(ctx, address, host, kind, offer)
	if errors.Is(err, errPeerClosedAtV2) {
		if m.cfg.Versions.Min > 1 {
			err = versionRefusal(versionError{ours: m.cfg.Versions, v1Only: true})
		} else if conn, version, err = m.attempt(ctx, address, host, kind, 1); err == nil {
			m.v1.remember(address)
		}
	}
	if err != nil {
		var rf *refusal
		switch {
		case errors.As(err, &rf) && rf.reason == RefusedLineage:
			m.count.refuse(RefusedLineage)
			m.stale(rf)
			if n, ok := m.warned.allowCount("dial-lineage"); ok {
				m.log.Error("outgoing connection refused by the lineage fence", "peer", address, "kind", kind, "reason", RefusedLineage, "err", err, "also_refused_unlogged", n)
			}
		case errors.As(err, &rf) && rf.reason == RefusedVersion:
			m.count.refuse(RefusedVersion)
			if n, ok := m.warned.allowCount("dial-version"); ok {
				m.log.Warn(rf.logLine(address), "peer", address, "kind", kind, "reason", RefusedVersion, "also_refused_unlogged", n)
			}
		case errors.As(err, &rf) || errors.Is(err, errPeerRefusedProof) || errors.Is(err, errPeerNoHandshake) || errors.Is(err, errPeerClosedAtV2):
			m.count.dialAuthFailed.Add(1)
			if m.warned.allow("dial-auth") {
				m.log.Warn("outgoing connection failed authentication", "peer", address, "err", err)
			}
		}
		return nil, fail(err)
	}
	if m.auth != nil {
		m.count.establish(DirectionOut, version)
	}
	return m.cfg.Faults.wrap(conn)
}

// attempt opens one connection to address and runs the handshake on it,
// greeting with protocol version offer (1: release v0.1.0's handshake; 2:
// the negotiation). It returns the version negotiated; on error the
// connection is closed.
func (m *Mux) attempt(ctx context.Context, address, host string, kind byte, offer uint16) (net.Conn, uint16, error) {
	d := net.Dialer{LocalAddr: m.dialFrom}
	raw, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, 0, err
	}
	if dl, ok := ctx.Deadline(); ok {
		if err := raw.SetDeadline(dl); err != nil {
			raw.Close()
			return nil, 0, err
		}
	}
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(aLongTimeAgo) })
	conn, version, err := m.greet(raw, host, kind, offer)
	if !stop() {
		// ctx ended during setup and may have forced the deadline; the
		// connection cannot be trusted to have none, so discard it.
		raw.Close()
		return nil, 0, context.Cause(ctx)
	}
	if err == nil {
		err = raw.SetDeadline(time.Time{})
	}
	if err != nil {
		raw.Close()
		return nil, 0, err
	}
	return conn, version, nil
}

// greet runs the client side of the handshake on raw: TLS if configured,
// then the kind byte and, with a secret, the mutual proof in the handshake
// of version offer. It returns the protocol version negotiated.
func (m *Mux) greet(raw net.Conn, host string, kind byte, offer uint16) (net.Conn, uint16, error) {
	conn := raw
	if m.cfg.TLS != nil {
		tc := tls.Client(raw, clientTLS(m.cfg.TLS, host))
		if err := tc.Handshake(); err != nil {
			return nil, 0, fmt.Errorf("tls handshake: %w", err)
		}
		conn = tc
	}
	mine := m.identity()
	hello, nonceD, err := m.auth.hello(kind)
	if m.auth != nil && offer >= 2 {
		hello, nonceD, err = m.auth.helloV2(kind, mine)
	}
	if err != nil {
		return nil, 0, err
	}
	if _, err := conn.Write(hello); err != nil {
		return nil, 0, fmt.Errorf("send kind byte: %w", err)
	}
	if m.auth == nil {
		return conn, 0, nil
	}
	binding, err := tlsBinding(conn)
	if err != nil {
		return nil, 0, err
	}
	if offer >= 2 {
		version, _, err := m.auth.dialV2(conn, kind, nonceD, binding, mine)
		if err != nil {
			return nil, 0, err
		}
		return conn, version, nil
	}
	if err := m.auth.dial(conn, kind, nonceD, binding); err != nil {
		return nil, 0, err
	}
	if err := fenceV1(mine); err != nil {
		return nil, 0, err
	}
	return conn, 1, nil
}

// setupError carries why a dial failed; it reports a timeout when the cause
// was one, so callers checking net.Error.Timeout see it through the
// *net.OpError around it.
type setupError struct{ err error }

func (e *setupError) Error() string { return e.err.Error() }
func (e *setupError) Unwrap() error { return e.err }

// Timeout reports whether the setup ran out of time.
func (e *setupError) Timeout() bool {
	var ne net.Error
	return errors.As(e.err, &ne) && ne.Timeout()
}

// Temporary is part of net.Error; no setup failure is worth retrying blindly.
func (e *setupError) Temporary() bool { return false }
