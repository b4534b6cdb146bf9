package httpx

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the public listener's connection caps.
const (
	DefaultMaxConns          = 4096
	DefaultMaxConnsPerSource = 256
)

// ConnLimits configures LimitListener.
type ConnLimits struct {
	// Max is the cap on open connections; 0 means DefaultMaxConns, a
	// negative value no cap.
	Max int
	// PerSource caps the open connections of one source (an IPv4 address,
	// an IPv6 prefix of IPv6SourceBits); 0 means DefaultMaxConnsPerSource,
	// a negative value no cap. Peers in TrustedProxies are exempt: every
	// client of a reverse proxy arrives over the proxy's connections.
	PerSource      int
	IPv6SourceBits int
	TrustedProxies []netip.Prefix
	// TLS, when the port serves HTTPS on top of the listener, is its
	// server configuration: a refused connection is then answered after
	// a TLS handshake (HTTP/1.1 only), within the same second, so that
	// an HTTPS client reads the 429 or 503 instead of a handshake error.
	TLS *tls.Config
}

// Refusal reasons, as LimitListener.Refused counts them.
const (
	RefusedTotal     = "total"
	RefusedPerSource = "per_source"
)

// LimitListener caps the connections a listener holds open, in total and
// per source, so that idle keep-alive connections from one client (or
// many) cannot take every file descriptor and the memory behind them. A
// connection over a cap never reaches the HTTP server: it is answered
// with a short HTTP error (503 over the total, 429 over the per-source
// cap, "Connection: close") and closed (see refuse); Accept goes on with
// the next at once.
// Counts drop when a connection is closed, whoever closes it.
type LimitListener struct {
	net.Listener
	limits ConnLimits

	mu       sync.Mutex
	open     int
	bySource map[string]int

	refusedTotal, refusedPerSource atomic.Uint64
	refusing                       chan struct{} // a slot per refusal being answered
}

// NewLimitListener wraps ln with the caps of limits.
func NewLimitListener(ln net.Listener, limits ConnLimits) *LimitListener {
	if limits.Max == 0 {
		limits.Max = DefaultMaxConns
	}
	if limits.PerSource == 0 {
		limits.PerSource = DefaultMaxConnsPerSource
	}
	if limits.TLS != nil {
		// The refusal is written as HTTP/1.1: a client that would speak
		// HTTP/2 is told to speak HTTP/1.1 on this connection.
		limits.TLS = limits.TLS.Clone()
		limits.TLS.NextProtos = []string{"http/1.1"}
	}
	return &LimitListener{Listener: ln, limits: limits, bySource: map[string]int{}, refusing: make(chan struct{}, refusers)}
}

// Accept returns the next connection within the caps.
func (l *LimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		source, exempt := l.sourceOf(c)
		reason := l.admit(source, exempt)
		if reason == "" {
			return &limitedConn{Conn: c, l: l, source: source, exempt: exempt}, nil
		}
		l.refuse(c, reason)
	}
}

// sourceOf names c's source, and whether it is exempt from the
// per-source cap.
func (l *LimitListener) sourceOf(c net.Conn) (string, bool) {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String(), false
	}
	a := ap.Addr().Unmap()
	if trusted(a, l.limits.TrustedProxies) {
		return "", true
	}
	return SourceKey(a.WithZone("").String(), l.limits.IPv6SourceBits), false
}

func (l *LimitListener) admit(source string, exempt bool) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limits.Max > 0 && l.open >= l.limits.Max {
		l.refusedTotal.Add(1)
		return RefusedTotal
	}
	if !exempt && l.limits.PerSource > 0 && l.bySource[source] >= l.limits.PerSource {
		l.refusedPerSource.Add(1)
		return RefusedPerSource
	}
	l.open++
	if !exempt {
		l.bySource[source]++
	}
	return ""
}

func (l *LimitListener) release(source string, exempt bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if exempt {
		return
	}
	if n := l.bySource[source] - 1; n > 0 {
		l.bySource[source] = n
	} else {
		delete(l.bySource, source)
	}
}

// Open returns the number of connections open now.
func (l *LimitListener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Refused returns how many connections were refused for reason
// (RefusedTotal or RefusedPerSource) since the listener was made.
func (l *LimitListener) Refused(reason string) uint64 {
	if reason == RefusedTotal {
		return l.refusedTotal.Load()
	}
	return l.refusedPerSource.Load()
}

// Answers to refused connections, in the shapes of docs/contract.md §4.
var (
	refusedTotalAnswer  = rawAnswer("503 Service Unavailable", "unavailable", "too many open connections; retry later")
	refusedSourceAnswer = rawAnswer("429 Too Many Requests", "rate_limited", "too many open connections from this address; close idle ones or retry later")
)

func rawAnswer(status, code, msg string) []byte {
	body := fmt.Sprintf(`{"error":{"code":%q,"message":%q}}`+"\n", code, msg)
	return fmt.Appendf(nil, "HTTP/1.1 %s\r\nContent-Type: application/json; charset=utf-8\r\n"+
		"X-Content-Type-Options: nosniff\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, len(body), body)
}

// refusers bounds the connections being answered a refusal at once;
// past it, a refused connection is closed without an answer, so that a
// flood of connections costs no more than the caps allow.
const refusers = 64

// refuse answers c in the background and closes it. It reads the
// request's first bytes first (within a second): an answer that arrives
// before its request is taken for a broken connection by some clients (Go's
// among them), and closing on unread bytes resets the connection under the
// answer. Past `refusers` refusals in flight, c is closed at once.
func (l *LimitListener) refuse(c net.Conn, reason string) {
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	answer := refusedTotalAnswer
	if reason == RefusedPerSource {
		answer = refusedSourceAnswer
	}
	go func() {
		defer func() { <-l.refusing }()
		if l.limits.TLS != nil {
			c = tls.Server(c, l.limits.TLS) // the handshake runs within the Read below
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		buf := make([]byte, 4096)
		c.Read(buf)
		c.Write(answer)
	}()
}

// limitedConn gives its slot back once, when closed.
type limitedConn struct {
	net.Conn
	l      *LimitListener
	source string
	exempt bool
	once   sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.source, c.exempt) })
	return err
}
