package httpx

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// ForeignHost reports a request that DNS rebinding may have brought, which
// /mcp and the REST API's state-changing routes refuse (403), and says
// why. Rebinding points a name the attacker owns at this node, so that a
// browser visiting the attacker's page sends the node requests whose
// Origin matches their Host: the Origin rule (CrossSite) sees a
// same-origin request. What gives it away is the Host: a name the node was
// never given.
//
// The node's names are: any IP literal (no DNS is involved), "localhost"
// and *.localhost (browsers resolve those to loopback themselves), and the
// hosts of allowed (the node passes --allowed-origins and its
// --public-url's origin). A request from a trusted proxy is never refused:
// the proxy chose the Host. Any other Host is refused
//
//   - on a loopback listener, for every request: only a browser on this
//     machine, led there by a rebound name, sends one;
//   - on other listeners, for a browser's request (an Origin or
//     Sec-Fetch-Site header) whose Origin is not one of allowed: a page of
//     the node's own origin under an unknown name. Clients that are not
//     browsers (curl, SDKs, agents, the admin CLI) are served under any
//     Host, as are pages of an allowed origin.
func ForeignHost(r *http.Request, allowed []string, trustedProxies []netip.Prefix) (reason string, refused bool) {
	host := hostOnly(r.Host)
	if knownHost(host, allowed) || fromProxy(r, trustedProxies) {
		return "", false
	}
	switch {
	case onLoopback(r):
		return fmt.Sprintf("Host %q is not a name of this node (a loopback listener answers loopback names, --public-url's host and --allowed-origins' hosts; DNS rebinding is refused)", r.Host), true
	case browserRequest(r) && !originListed(r, allowed):
		return fmt.Sprintf("Host %q is not a name of this node (a browser's request must name --public-url's host or an --allowed-origins host; DNS rebinding is refused)", r.Host), true
	}
	return "", false
}

// hostOnly returns the host of a Host header: no port, no brackets, lower
// case, no trailing dot.
func hostOnly(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
}

// knownHost reports whether host is one of the node's names (see
// ForeignHost).
func knownHost(host string, allowed []string) bool {
	if host == "" {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	for _, a := range allowed {
		if u, err := url.Parse(strings.TrimSpace(a)); err == nil && u.Host != "" && hostOnly(u.Host) == host {
			return true
		}
	}
	return false
}

// IsLoopbackHost reports whether hostport (a host with an optional port)
// names this machine: "localhost" or a loopback address.
func IsLoopbackHost(hostport string) bool {
	host := hostOnly(hostport)
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// onLoopback reports whether the request came in on a loopback listener.
func onLoopback(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && IsLoopbackHost(local.String())
}

// fromProxy reports whether the request's peer is a trusted proxy.
func fromProxy(r *http.Request, trustedProxies []netip.Prefix) bool {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	for _, p := range trustedProxies {
		if p.Contains(peer.Addr().Unmap()) {
			return true
		}
	}
	return false
}

// browserRequest reports a request a browser made: browsers send Origin
// on every POST and Sec-Fetch-Site on every request.
func browserRequest(r *http.Request) bool {
	return len(r.Header.Values("Origin")) > 0 || r.Header.Get("Sec-Fetch-Site") != ""
}

// originListed reports whether the request has an Origin and every one it
// has is in allowed, so that it was not served for matching the Host.
func originListed(r *http.Request, allowed []string) bool {
	origins := r.Header.Values("Origin")
	if len(origins) == 0 {
		return false
	}
	for _, o := range origins {
		if !OriginAllowed(o, "", allowed) {
			return false
		}
	}
	return true
}
