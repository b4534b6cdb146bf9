package transport

import (
	"context"
	"crypto/tls"
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
// against the cluster CA) and the kind byte all finish within ctx, or within
// the handshake timeout when ctx has no deadline. The returned connection has
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
// Accept yields only raft connections; its Dial opens a raft connection to a
// peer within the timeout raft passes (TLS included); its Addr is the
// advertised address, which raft uses as this node's address. Closing it
// (raft does so on shutdown) stops raft traffic only; the Mux stays open
// until Mux.Close. The same value is returned on every call.
func (m *Mux) RaftLayer() raft.StreamLayer { return raftLayer{m.raft, m} }

// RPCListener returns the listener for the internal channel, to serve an
// http.Server on. Its Accept yields only connections that passed TLS (when
// configured) and sent the internal-channel kind byte. Closing it stops the
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
// connection outlives it.
func (m *Mux) dial(ctx context.Context, address string, kind byte) (net.Conn, error) {
	if m.isClosed() {
		return nil, fmt.Errorf("transport: dial %s: %w", address, net.ErrClosed)
	}
	if m.cfg.Faults.Isolated() {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ErrIsolated}
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("transport: dial %q: %w", address, err)
	}
	d := net.Dialer{LocalAddr: m.dialFrom}
	raw, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, fmt.Errorf("transport: dial %s: %w", address, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		if err := raw.SetDeadline(dl); err != nil {
			raw.Close()
			return nil, fmt.Errorf("transport: dial %s: %w", address, err)
		}
	}
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(aLongTimeAgo) })
	conn, err := m.greet(raw, host, kind)
	if !stop() {
		// ctx ended during setup and may have forced the deadline; the
		// connection cannot be trusted to have none, so discard it.
		raw.Close()
		return nil, fmt.Errorf("transport: dial %s: %w", address, context.Cause(ctx))
	}
	if err == nil {
		err = raw.SetDeadline(time.Time{})
	}
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("transport: dial %s: %w", address, err)
	}
	return m.cfg.Faults.wrap(conn)
}

// greet runs the client side of the handshake on raw: TLS if configured,
// then the kind byte.
func (m *Mux) greet(raw net.Conn, host string, kind byte) (net.Conn, error) {
	conn := raw
	if m.cfg.TLS != nil {
		tc := tls.Client(raw, clientTLS(m.cfg.TLS, host))
		if err := tc.Handshake(); err != nil {
			return nil, fmt.Errorf("tls handshake: %w", err)
		}
		conn = tc
	}
	if _, err := conn.Write([]byte{kind}); err != nil {
		return nil, fmt.Errorf("send kind byte: %w", err)
	}
	return conn, nil
}
