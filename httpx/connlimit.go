package httpx

import (
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
}

// Refusal reasons, as LimitListener.Refused counts them.
const (
	RefusedTotal     = "total"
	RefusedPerSource = "per_source"
)

// LimitListener caps the connections a listener holds open, in total and
// per source, so that idle keep-alive connections from one client (or
// many) cannot take every file descriptor and the memory behind them. A
// connection over a cap is answered at once with a short HTTP error (503
// over the total, 429 over the per-source cap, "Connection: close") and
// closed, without reaching the HTTP server; Accept goes on with the next.
// Counts drop when a connection is closed, whoever closes it.
type LimitListener struct {
	net.Listener
	limits ConnLimits

	mu       sync.Mutex
	open     int
	bySource map[string]int

	refusedTotal, refusedPerSource atomic.Uint64
}

// NewLimitListener wraps ln with the caps of limits.
func NewLimitListener(ln net.Listener, limits ConnLimits) *LimitListener {
	if limits.Max == 0 {
		limits.Max = DefaultMaxConns
	}
	if limits.PerSource == 0 {
		limits.PerSource = DefaultMaxConnsPerSource
	}
	return &LimitListener{Listener: ln, limits: limits, bySource: map[string]int{}}
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
		refuse(c, reason)
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

// Answers to refused connections, in the shapes of SPEC section 4. They
// are written before the request is read: HTTP/1.1 clients take an early
// answer with "Connection: close" as the answer to the request they send.
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

// refuse answers c and closes it. The write is bounded: a fresh socket's
// send buffer takes these few bytes at once, and a peer that reads
// nothing must not hold the accept loop.
func refuse(c net.Conn, reason string) {
	answer := refusedTotalAnswer
	if reason == RefusedPerSource {
		answer = refusedSourceAnswer
	}
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	c.Write(answer)
	c.Close()
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
