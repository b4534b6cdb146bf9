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
	d := net.Dialer{LocalAddr: m.dialFrom}
	raw, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, fail(err)
	}
	if dl, ok := ctx.Deadline(); ok {
		if err := raw.SetDeadline(dl); err != nil {
			raw.Close()
			return nil, fail(err)
		}
	}
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(aLongTimeAgo) })
	conn, err := m.greet(raw, host, kind)
	if !stop() {
		// ctx ended during setup and may have forced the deadline; the
		// connection cannot be trusted to have none, so discard it.
		raw.Close()
		return nil, fail(context.Cause(ctx))
	}
	if err == nil {
		err = raw.SetDeadline(time.Time{})
	}
	if err != nil {
		raw.Close()
		var rf *refusal
		if errors.As(err, &rf) || errors.Is(err, errPeerRefusedProof) || errors.Is(err, errPeerNoHandshake) {
			m.count.dialAuthFailed.Add(1)
			if m.warned.allow("dial-auth") {
				m.log.Warn("outgoing connection failed authentication", "peer", address, "err", err)
			}
		}
		return nil, fail(err)
	}
	return m.cfg.Faults.wrap(conn)
}

// greet runs the client side of the handshake on raw: TLS if configured,
// then the kind byte and, with a secret, the mutual proof.
func (m *Mux) greet(raw net.Conn, host string, kind byte) (net.Conn, error) {
	conn := raw
	if m.cfg.TLS != nil {
		tc := tls.Client(raw, clientTLS(m.cfg.TLS, host))
		if err := tc.Handshake(); err != nil {
			return nil, fmt.Errorf("tls handshake: %w", err)
		}
		conn = tc
	}
	hello, nonceD, err := m.auth.hello(kind)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(hello); err != nil {
		return nil, fmt.Errorf("send kind byte: %w", err)
	}
	if m.auth != nil {
		binding, err := tlsBinding(conn)
		if err != nil {
			return nil, err
		}
		if err := m.auth.dial(conn, kind, nonceD, binding); err != nil {
			return nil, err
		}
	}
	return conn, nil
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
