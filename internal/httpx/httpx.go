// Package httpx holds the HTTP helpers shared by the REST API, the MCP
// endpoint and the pages: the client address under the trusted-proxy rule,
// and JSON answers in the shapes of docs/contract.md §4.
package httpx

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/restarea/restarea"
)

// ParseTrustedProxies parses a comma-separated list of IP addresses and
// CIDR prefixes, e.g. "10.0.0.0/8,127.0.0.1".
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.Contains(f, "/") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: %v", f, err)
			}
			p = p.Masked()
			if p.Addr().Is4In6() && p.Bits() >= 96 {
				// ::ffff:a.b.c.d/n is the IPv4 prefix a.b.c.d/(n-96): peers
				// are compared unmapped, so a mapped prefix would never match.
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			out = append(out, p)
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: %v", f, err)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

func trusted(a netip.Addr, proxies []netip.Prefix) bool {
	a = a.Unmap()
	for _, p := range proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientAddr returns the address the per-source limit counts by: the peer
// address of r, unless the peer is a trusted proxy, in which case the
// right-most X-Forwarded-For address that is not itself a trusted proxy.
// X-Forwarded-For from an untrusted peer is ignored, so clients cannot
// choose their own source.
func ClientAddr(r *http.Request, proxies []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	peer = peer.Unmap()
	if len(proxies) == 0 || !trusted(peer, proxies) {
		return peer.String()
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		for _, h := range strings.Split(v, ",") {
			hops = append(hops, strings.TrimSpace(h))
		}
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(hops[i])
		if err != nil {
			// A malformed hop ends the chain we can trust.
			return peer.String()
		}
		a = a.Unmap()
		if !trusted(a, proxies) {
			return a.String()
		}
		peer = a
	}
	return peer.String()
}

// DefaultIPv6SourceBits is how many leading bits of an IPv6 address name
// one source when none is configured: a /64 is what one subscriber or one
// host is routinely given, so any address inside it is the same client.
const DefaultIPv6SourceBits = 64

// SourceKey turns a client address (as ClientAddr returns it) into the
// source the limits count by: an IPv4 address is itself, an IPv6 address
// is its prefix of v6bits bits ("2001:db8:1:2::/64"), since whoever holds
// one IPv6 address can usually pick any other in the same /64. v6bits of 0
// means DefaultIPv6SourceBits; 128 counts every address apart (and still
// writes the "/128"). The result depends only on its arguments, so every
// node turns one client into the same string, which the replicated
// per-source limit counts. A string that is not an address is returned
// as it is.
func SourceKey(addr string, v6bits int) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	if v6bits <= 0 || v6bits > 128 {
		v6bits = DefaultIPv6SourceBits
	}
	return netip.PrefixFrom(a.WithZone(""), v6bits).Masked().String()
}

// SourceOf is SourceKey of ClientAddr: the source r counts as.
func SourceOf(r *http.Request, proxies []netip.Prefix, v6bits int) string {
	return SourceKey(ClientAddr(r, proxies), v6bits)
}

type sourceKey struct{}

// WithSource returns ctx carrying the source addr (see SourceKey).
func WithSource(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, sourceKey{}, addr)
}

// Source returns the source stored by WithSource, or "".
func Source(ctx context.Context) string {
	s, _ := ctx.Value(sourceKey{}).(string)
	return s
}

// SourceMiddleware stores SourceOf(r) in each request's context, where
// handlers that cannot see the request (MCP tools) find it with Source.
func SourceMiddleware(proxies []netip.Prefix, v6bits int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(WithSource(r.Context(), SourceOf(r, proxies, v6bits))))
	})
}

// NoSniff sets "X-Content-Type-Options: nosniff" on every answer of next,
// so that no browser takes a JSON answer, a Markdown file or an error for
// HTML or script whatever text an entry holds.
func NoSniff(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// WriteJSON writes v as JSON with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// WriteData writes {"data": v} with the given status.
func WriteData(w http.ResponseWriter, status int, v any) {
	WriteJSON(w, status, struct {
		Data any `json:"data"`
	}{v})
}

// ErrorBody is the error member of docs/contract.md §4.
type ErrorBody struct {
	Code    restarea.Code `json:"code"`
	Message string        `json:"message"`
}

// WriteError writes {"error": {"code", "message"}} with the status of err's
// code, and a Retry-After header on 429 and 503.
func WriteError(w http.ResponseWriter, err error) {
	code := restarea.ErrorCode(err)
	status := Status(code)
	if secs := restarea.RetryAfterSeconds(err); secs > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	WriteJSON(w, status, struct {
		Error ErrorBody `json:"error"`
	}{ErrorBody{Code: code, Message: restarea.ErrorMessage(err)}})
}
