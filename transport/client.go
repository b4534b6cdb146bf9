package transport

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// dialTimeout bounds connecting to a peer's internal channel, DNS and TLS
// included.
const dialTimeout = 2 * time.Second

// HTTPClient returns an http.Client whose requests travel over the internal
// channel of the node named in the URL: use "http://HOST:PORT/path" with the
// node's advertised address; TLS, when configured, happens underneath, so the
// scheme stays "http" and any other scheme is refused. timeout bounds each
// whole request (0 means none; prefer a context deadline then). Connections
// are kept alive and reused; create one client and share it, and call its
// CloseIdleConnections when done. Proxies from the environment are never
// used and redirects are not followed: the 3xx response is returned as is,
// because a signed internal request must not be re-sent elsewhere.
func (m *Mux) HTTPClient(timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			// A dead peer (or a name that no longer resolves) must fail
			// fast: the caller retries at the new leader, and a request's
			// own deadline is far longer than a dial should take.
			ctx, cancel := context.WithTimeout(ctx, dialTimeout)
			defer cancel()
			return m.DialRPC(ctx, addr)
		},
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}
	return &http.Client{
		Transport: httpOnly{tr},
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// httpOnly refuses URLs whose scheme is not "http": with "https" the
// standard transport would try to run a second TLS layer over the channel.
type httpOnly struct{ *http.Transport }

// RoundTrip sends r if its scheme is "http".
func (h httpOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "http" {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, fmt.Errorf("transport: internal channel URLs use http://, not %q", r.URL.Scheme+"://")
	}
	return h.Transport.RoundTrip(r)
}
