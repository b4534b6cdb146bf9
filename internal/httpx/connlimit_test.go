package httpx

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/testkit"
)

// startLimited serves a trivial handler behind NewLimitListener(limits).
func startLimited(t *testing.T, limits ConnLimits) (*LimitListener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ll := NewLimitListener(ln, limits)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })}
	go srv.Serve(ll)
	t.Cleanup(func() { srv.Close() })
	return ll, ln.Addr().String()
}

// dialFrom opens a keep-alive connection from the loopback address from
// and returns the status of one request on it.
func dialFrom(t *testing.T, from, addr string) (net.Conn, int) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		return c, 0
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("from %s: %v", from, err)
	}
	resp.Body.Close()
	return c, resp.StatusCode
}

func waitOpen(t *testing.T, ll *LimitListener, want int) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, fmt.Sprintf("%d open connections", want), func() error {
		if n := ll.Open(); n != want {
			return fmt.Errorf("%d open", n)
		}
		return nil
	})
}

// Idle keep-alive connections used to be unbounded: 16,428 of them took
// 300 MiB and most file descriptors.
func TestLimitListener(t *testing.T) {
	ll, addr := startLimited(t, ConnLimits{Max: 3, PerSource: 2})
	a1, s1 := dialFrom(t, "127.0.0.1", addr)
	_, s2 := dialFrom(t, "127.0.0.1", addr)
	if s1 != 200 || s2 != 200 {
		t.Fatalf("first two: %d %d", s1, s2)
	}
	if _, s := dialFrom(t, "127.0.0.1", addr); s != http.StatusTooManyRequests {
		t.Fatalf("third from one source: %d, want 429", s)
	}
	if _, s := dialFrom(t, "127.0.0.2", addr); s != 200 {
		t.Fatalf("another source: %d", s)
	}
	if _, s := dialFrom(t, "127.0.0.3", addr); s != http.StatusServiceUnavailable {
		t.Fatalf("past the total: %d, want 503", s)
	}
	if ll.Refused(RefusedPerSource) != 1 || ll.Refused(RefusedTotal) != 1 || ll.Open() != 3 {
		t.Fatalf("refused %d/%d, open %d", ll.Refused(RefusedPerSource), ll.Refused(RefusedTotal), ll.Open())
	}
	// A closed connection gives its slot back.
	a1.Close()
	waitOpen(t, ll, 2)
	if _, s := dialFrom(t, "127.0.0.3", addr); s != 200 {
		t.Fatalf("after a close: %d", s)
	}
}

func TestLimitListenerExemptsTrustedProxies(t *testing.T) {
	ll, addr := startLimited(t, ConnLimits{Max: 10, PerSource: 1, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.9/32")}})
	for i := range 3 {
		if _, s := dialFrom(t, "127.0.0.9", addr); s != 200 {
			t.Fatalf("proxy connection %d: %d", i, s)
		}
	}
	waitOpen(t, ll, 3)
}

// A refused client reads a proper answer, not a reset: Go's client, which
// takes an answer that comes before its request for a broken connection.
func TestLimitListenerAnswersGoClient(t *testing.T) {
	_, addr := startLimited(t, ConnLimits{Max: 10, PerSource: 1})
	dialFrom(t, "127.0.0.1", addr) // holds the source's one connection
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
