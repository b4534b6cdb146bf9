package transport

import (
	"net"
	"sync"
	"time"
)

// subListener is the net.Listener for one kind of connection. Connections
// arrive only through deliver, already past TLS and the kind byte.
type subListener struct {
	addr net.Addr
	ch   chan net.Conn // unbuffered: a connection is handed over only to a live Accept
	done chan struct{}
	once sync.Once
}

func newSubListener(a net.Addr) *subListener {
	return &subListener{addr: a, ch: make(chan net.Conn), done: make(chan struct{})}
}

// Accept waits for the next connection of this kind. After Close (of this
// listener or of the Mux) it returns an error satisfying
// errors.Is(err, net.ErrClosed), which both raft and http.Server treat as
// the end of their accept loops.
func (l *subListener) Accept() (net.Conn, error) {
	// Checked first so a closed listener never returns a connection that
	// raced with Close.
	select {
	case <-l.done:
		return nil, l.closedErr()
	default:
	}
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, l.closedErr()
	}
}

// Close stops this kind only: the Mux and the other kind keep working, and
// later connections of this kind are closed on arrival. raft's
// NetworkTransport calls it on shutdown. Idempotent; always nil.
func (l *subListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr returns the Mux's advertised address.
func (l *subListener) Addr() net.Addr { return l.addr }

func (l *subListener) isClosed() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

func (l *subListener) closedErr() error {
	return &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
}

// deliver hands c to an Accept call before deadline. It reports false if the
// listener closed or nobody accepted in time; the caller then closes c.
func (l *subListener) deliver(c net.Conn, deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-l.done:
		return false
	default:
	}
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	case <-t.C:
		return false
	}
}
