package client

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net/http"
	"time"
)

// Defaults of Options.
const (
	DefaultMaxAttempts    = 8
	DefaultDeadline       = 2 * time.Minute
	DefaultAttemptTimeout = 20 * time.Second
	DefaultBaseBackoff    = 250 * time.Millisecond
	DefaultMaxBackoff     = 8 * time.Second
)

// Options configure a Client. Zero values take the defaults above.
type Options struct {
	// Servers are the base URLs of cluster nodes ("http://host:port"),
	// tried in turn: the client moves to the next one when the current one
	// cannot be reached. At least one is required.
	Servers []string
	// Journal records every post before it is sent. Post and Resume
	// refuse to run without one (a client that cannot remember what it
	// sent cannot retry it safely); reads do not need it.
	Journal *Journal
	// HTTPClient sends the requests; nil means a client that does not
	// follow redirects and has no overall timeout (AttemptTimeout bounds
	// each request instead).
	HTTPClient *http.Client
	// RootCAs verifies https:// servers when HTTPClient is nil (a private
	// CA's certificate added to the system's roots, for instance); nil
	// means the system's roots.
	RootCAs *x509.CertPool
	// AllowPlainHTTP lets an Admin send its token over plain http:// to a
	// host beyond loopback. Without it NewAdmin refuses such a server
	// (ErrPlainHTTP) and an Admin never sends the token to such a URL,
	// member URLs included: the token would cross the network in clear.
	// Clients that carry no token (New) are not concerned.
	AllowPlainHTTP bool
	// MaxAttempts bounds the post requests of one Post, and separately the
	// requests of one read (or one read-back page).
	MaxAttempts int
	// Deadline bounds one Post (sending, waiting and reading back) and one
	// read, on top of the caller's context.
	Deadline time.Duration
	// AttemptTimeout bounds one HTTP request; past it the answer counts as
	// lost.
	AttemptTimeout time.Duration
	// BaseBackoff and MaxBackoff shape the exponential backoff (with
	// jitter) after a lost answer or a 503 without Retry-After.
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// WaitWhileWritesDisabled makes Post keep retrying through
	// 503 writes_disabled (within the budget) instead of returning
	// Unconfirmed at once.
	WaitWhileWritesDisabled bool
	// Logger receives a line per retry; nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.HTTPClient == nil {
		// Redirects are not followed: net/http turns a POST into a GET on
		// 301–303, which would lose the post while looking like an answer.
		o.HTTPClient = &http.Client{Transport: o.transport(), CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Deadline <= 0 {
		o.Deadline = DefaultDeadline
	}
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = DefaultAttemptTimeout
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = DefaultBaseBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.MaxBackoff < o.BaseBackoff {
		o.MaxBackoff = o.BaseBackoff
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// transport is the round tripper of a default HTTP client: net/http's,
// trusting RootCAs when they are set.
func (o Options) transport() http.RoundTripper {
	if o.RootCAs == nil {
		return http.DefaultTransport
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12}
	return tr
}
