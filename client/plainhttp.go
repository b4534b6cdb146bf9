package client

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// ErrPlainHTTP is the error (wrapped with the URL) for a plain http://
// URL to a host beyond loopback where an Admin would send its token:
// anyone on the path would read the token and hold the cluster's admin
// API. Options.AllowPlainHTTP lifts the refusal.
var ErrPlainHTTP = errors.New("plain http:// beyond loopback: the admin token would cross the network in clear")

// checkPlainHTTP returns an error wrapping ErrPlainHTTP when rawURL is
// http:// to a host that is not loopback. Loopback is "localhost" and the
// addresses 127.0.0.0/8 and ::1, as written in the URL: a name is not
// resolved, since what it resolves to is not the sender's to trust.
func checkPlainHTTP(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || !strings.EqualFold(u.Scheme, "http") || isLoopbackHost(u.Hostname()) {
		return nil // not plain http (New reports malformed URLs)
	}
	return fmt.Errorf("%s: %w", strings.TrimRight(rawURL, "/"), ErrPlainHTTP)
}

// isLoopbackHost reports whether host (without a port) names this machine
// without any network in between: "localhost" or a loopback address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
