package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"
)

// DefaultHandshakeTimeout bounds how long an accepted connection may take to
// finish TLS and send its kind byte when Config.HandshakeTimeout is zero.
const DefaultHandshakeTimeout = 5 * time.Second

// DefaultMaxPending caps the connections in their handshake at once when
// Config.MaxPending is zero.
const DefaultMaxPending = 1024

// DefaultMaxPendingPerSource caps the handshakes of one source when
// Config.MaxPendingPerSource is zero. A member opens a few connections
// at a time (raft's pool of 8 per peer, the internal channel's), and a
// whole cluster on one machine shares an address; 64 leaves that room and
// 960 slots to the other sources.
const DefaultMaxPendingPerSource = 64

// Config describes one node's cluster port.
type Config struct {
	// BindAddr is the host:port to listen on, e.g. "127.0.0.1:8300".
	// Port 0 picks a free port (useful in tests).
	BindAddr string

	// AdvertiseAddr is the host:port other nodes dial to reach this one and
	// the address raft records for this node. Empty means the listener's own
	// address, which must then not be an unspecified IP such as 0.0.0.0.
	AdvertiseAddr string

	// TLS, when non-nil, turns on mutual TLS for every connection on the
	// port: accepted connections must present a certificate signed by the
	// configured CA, and outgoing connections verify the peer the same way.
	// It must carry this node's certificate and the CA (LoadTLS builds one).
	// Nil means plain TCP.
	TLS *tls.Config

	// Secret is the cluster secret. When set, both ends of every connection
	// (raft and internal channel alike) prove they hold it before anything
	// else crosses (see auth.go); a connection that fails is closed. Empty
	// means a single node: no handshake, and then BindAddr must be a
	// loopback address unless TLS is set.
	Secret []byte

	// Faults, when set, can isolate this node (tests and chaos runs).
	Faults *Faults

	// Logger receives connection-level events. Nil discards them.
	Logger *slog.Logger

	// HandshakeTimeout bounds, for an accepted connection, the TLS handshake,
	// the kind byte and the hand-off to Accept together; for an outgoing
	// DialRPC whose context has no deadline, the dial and handshake.
	// Zero means DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration

	// MaxPending caps the accepted connections still in their handshake;
	// one more is closed at once (counted as RefusedCapacity). Zero means
	// DefaultMaxPending.
	MaxPending int

	// MaxPendingPerSource caps the connections still in their handshake
	// from one source (an IPv4 address, an IPv6 /64), so that one address
	// cannot hold every slot of MaxPending; one more from it is closed at
	// once (counted as RefusedSource). Zero means DefaultMaxPendingPerSource,
	// and it is never above MaxPending.
	MaxPendingPerSource int

	// Versions is the range of raft-port protocol versions this node
	// announces and accepts. Zero means ThisRelease (ProtocolMin to
	// ProtocolMax), which every node must use; another range exists for
	// tests that run a node "releases apart" (restarea serve
	// --test-protocol-versions).
	Versions VersionRange

	// Identity, when set, tells the lineage of the node's data for every
	// handshake (lineage.go); it is called once per connection and must be
	// cheap. Nil means a node with no data yet, which the fence never
	// refuses. The fence needs a Secret: without one there is no handshake.
	Identity func() Identity

	// OnStale, when set, is called (from a handshake's goroutine) each time
	// the fence finds this node's own data stale: a peer proved that its
	// cluster was recovered from this node's lineage. The node must stop
	// serving; the error says how to wipe it.
	OnStale func(*StaleError)

	// legacyV1 makes the Mux speak exactly as release v0.1.0 did: the
	// version-1 handshake only, and a version-2 greeting refused as an
	// unknown magic. Tests of the fallback only.
	legacyV1 bool

	// now is the clock of the version-1 memory; nil is time.Now (tests).
	now func() time.Time
}

// withDefaults returns a copy of c with zero fields filled in, or an error if
// c cannot work.
func (c Config) withDefaults() (Config, error) {
	if c.BindAddr == "" {
		return c, errors.New("transport: BindAddr is empty")
	}
	if c.HandshakeTimeout < 0 {
		return c, fmt.Errorf("transport: negative HandshakeTimeout %v", c.HandshakeTimeout)
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.MaxPending < 0 {
		return c, fmt.Errorf("transport: negative MaxPending %d", c.MaxPending)
	}
	if c.MaxPending == 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.MaxPendingPerSource < 0 {
		return c, fmt.Errorf("transport: negative MaxPendingPerSource %d", c.MaxPendingPerSource)
	}
	if c.MaxPendingPerSource == 0 {
		c.MaxPendingPerSource = DefaultMaxPendingPerSource
	}
	c.MaxPendingPerSource = min(c.MaxPendingPerSource, c.MaxPending)
	if c.Versions == (VersionRange{}) {
		c.Versions = ThisRelease
	}
	if c.legacyV1 {
		c.Versions = VersionRange{1, 1}
	}
	if err := c.Versions.Valid(); err != nil {
		return c, fmt.Errorf("transport: Versions: %w", err)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.TLS != nil && len(c.TLS.Certificates) == 0 && c.TLS.GetCertificate == nil {
		// Without a certificate every handshake would fail later with an
		// obscure alert; say so now.
		return c, errors.New("transport: TLS config has no certificate")
	}
	if c.TLS != nil && c.TLS.InsecureSkipVerify {
		// A member must never accept an unverified peer as a member.
		return c, errors.New("transport: TLS config must not skip verification")
	}
	if c.TLS != nil && c.TLS.RootCAs == nil {
		return c, errors.New("transport: TLS config has no CA (RootCAs)")
	}
	return c, nil
}

// errExposed refuses a port anyone could drive raft through.
func errExposed(bind string) error {
	return fmt.Errorf("transport: refusing to bind the cluster port to %s, beyond loopback, with neither TLS nor a cluster secret: "+
		"anyone who reaches it could send raft commands; set --cluster-secret (and --tls-cert/--tls-key/--tls-ca on untrusted networks) or bind 127.0.0.1", bind)
}

// checkExposure refuses, before binding, a bind address that is not
// loopback when nothing authenticates peers. A host name is checked after
// binding (exposedListener), on the address it resolved to.
func (c Config) checkExposure() error {
	if c.TLS != nil || len(c.Secret) > 0 {
		return nil
	}
	host, _, err := net.SplitHostPort(c.BindAddr)
	if err != nil {
		return fmt.Errorf("transport: bind address %q: %w", c.BindAddr, err)
	}
	if host == "" {
		return errExposed(c.BindAddr) // every interface
	}
	if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() {
		return errExposed(c.BindAddr)
	}
	return nil
}

// exposedListener reports whether a bound listener reaches beyond loopback
// while nothing authenticates peers.
func (c Config) exposedListener(a net.Addr) bool {
	if c.TLS != nil || len(c.Secret) > 0 {
		return false
	}
	tcp, ok := a.(*net.TCPAddr)
	return !ok || !tcp.IP.IsLoopback()
}

// advertised decides the address others dial: explicit if given, else the
// listener's. Either way it must name a concrete host and port, because raft
// stores it in the cluster configuration and peers dial it verbatim.
func advertised(explicit string, listened net.Addr) (net.Addr, error) {
	s := explicit
	if s == "" {
		s = listened.String()
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return nil, fmt.Errorf("transport: advertise address %q: %w", s, err)
	}
	if host == "" {
		return nil, fmt.Errorf("transport: advertise address %q has no host", s)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return nil, fmt.Errorf("transport: advertise address %q is unspecified; set AdvertiseAddr", s)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return nil, fmt.Errorf("transport: advertise address %q has no usable port", s)
	}
	return addr(net.JoinHostPort(host, port)), nil
}

// addr is a TCP address kept as text, so a DNS name given as AdvertiseAddr
// is neither resolved nor rewritten.
type addr string

// Network reports "tcp".
func (a addr) Network() string { return "tcp" }

// String returns the host:port text.
func (a addr) String() string { return string(a) }
