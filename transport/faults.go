package transport

import (
	"errors"
	"net"
	"sync"
)

// ErrIsolated is returned by dials while a node's Faults isolate it.
var ErrIsolated = errors.New("transport: node isolated by fault injection")

// Faults cuts a node off the network at its cluster port, for partition
// tests and the chaos tool's in-process targets: while isolated, the port
// closes every raft and internal connection it accepted or dialed, drops
// new ones on arrival and fails new dials. Raft sees exactly what a real
// partition shows it — connections that fail. The zero value is healed.
type Faults struct {
	mu       sync.Mutex
	isolated bool
	conns    map[*faultConn]struct{}
}

// Isolate cuts the node off until Heal.
func (f *Faults) Isolate() {
	f.mu.Lock()
	f.isolated = true
	conns := f.conns
	f.conns = nil
	f.mu.Unlock()
	for c := range conns {
		c.Conn.Close()
	}
}

// Heal lets connections through again.
func (f *Faults) Heal() {
	f.mu.Lock()
	f.isolated = false
	f.mu.Unlock()
}

// Isolated reports whether the node is cut off.
func (f *Faults) Isolated() bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.isolated
}

// wrap registers c so Isolate can close it; it refuses (closing c) while
// isolated. A nil Faults passes c through.
func (f *Faults) wrap(c net.Conn) (net.Conn, error) {
	if f == nil {
		return c, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.isolated {
		c.Close()
		return nil, ErrIsolated
	}
	fc := &faultConn{Conn: c, f: f}
	if f.conns == nil {
		f.conns = map[*faultConn]struct{}{}
	}
	f.conns[fc] = struct{}{}
	return fc, nil
}

type faultConn struct {
	net.Conn
	f *Faults
}

func (c *faultConn) Close() error {
	c.f.mu.Lock()
	delete(c.f.conns, c)
	c.f.mu.Unlock()
	return c.Conn.Close()
}
