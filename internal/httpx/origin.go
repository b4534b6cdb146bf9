package httpx

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// CrossSite reports a request that a browser sent on behalf of a page of
// another site, which the REST API's state-changing routes and /mcp refuse
// (403), and says why. A browser marks every request it makes for a page:
// an Origin on cross-origin requests and on every POST, and Sec-Fetch-Site.
// So:
//
//   - no Origin and no "Sec-Fetch-Site: cross-site": not a cross-site
//     browser request (curl, SDKs, agents, a same-origin page). Served.
//   - an Origin naming the request's own host (scheme default ports
//     ignored), or listed in allowed (exact, letter case ignored, a
//     trailing slash of the listed one ignored): served, whatever
//     Sec-Fetch-Site says.
//   - any other Origin, "null" (sandboxed frames, file: pages) or an
//     unparsable one: refused.
//   - "Sec-Fetch-Site: cross-site" without an Origin: refused.
//
// A simple cross-site POST (Content-Type text/plain, no preflight) is the
// case this exists for: any web page could otherwise make its visitors'
// browsers post in their name, from their address.
func CrossSite(r *http.Request, allowed []string) (reason string, refused bool) {
	origins := r.Header.Values("Origin")
	for _, o := range origins {
		if !OriginAllowed(o, r.Host, allowed) {
			return fmt.Sprintf("Origin %q is not allowed (a cross-site browser request; the operator can allow an origin with --allowed-origins)", o), true
		}
	}
	if len(origins) == 0 && strings.EqualFold(strings.TrimSpace(r.Header.Get("Sec-Fetch-Site")), "cross-site") {
		return "a cross-site browser request (Sec-Fetch-Site: cross-site) is not allowed", true
	}
	return "", false
}

// OriginAllowed reports whether origin, sent with a request for host,
// names host itself or is one of allowed.
func OriginAllowed(origin, host string, allowed []string) bool {
	origin = strings.TrimSpace(origin)
	if origin == "" {
		return false
	}
	for _, a := range allowed {
		if strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return hostPort(u.Scheme, u.Host) == hostPort(u.Scheme, host)
}

// hostPort lowercases h and drops the scheme's default port, so that
// "Example.org:443" and "example.org" compare equal under https.
func hostPort(scheme, h string) string {
	h = strings.ToLower(h)
	def := ":80"
	if scheme == "https" {
		def = ":443"
	}
	return strings.TrimSuffix(h, def)
}

// OriginOf returns the origin (scheme://host[:port], lowercase) of an
// absolute http(s) URL, or "" for anything else. A node allows the origin
// of its public URL, so that its own pages behind a proxy that rewrites
// Host still count as same-site.
func OriginOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}
