package transport

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Reasons an accepted connection is refused, the label values of the
// refusal counter (see Stats).
const (
	// RefusedAuth: the peer's proof of the cluster secret was wrong.
	RefusedAuth = "auth"
	// RefusedProtocol: an unknown kind byte, or no authentication greeting
	// after it (a stray client, a node of an earlier version or without a
	// secret).
	RefusedProtocol = "protocol"
	// RefusedVersion: the peer and this node share no raft-port protocol
	// version (they run releases more than one apart). Unlike the other
	// reasons it also counts outgoing connections so refused, since both
	// ends of such a pair need the operator's attention.
	RefusedVersion = "version"
	// RefusedTLS: the TLS handshake failed (no or a foreign certificate).
	RefusedTLS = "tls"
	// RefusedTimeout: the handshake did not finish within HandshakeTimeout.
	RefusedTimeout = "timeout"
	// RefusedIO: the peer hung up or the socket failed mid-handshake.
	RefusedIO = "io"
	// RefusedCapacity: MaxPending connections were already in their
	// handshake.
	RefusedCapacity = "capacity"
	// RefusedSource: MaxPendingPerSource connections from the same source
	// were already in their handshake.
	RefusedSource = "source"
	// RefusedUnaccepted: the handshake passed but nobody accepted the
	// connection in time (its listener is closed or not served yet).
	RefusedUnaccepted = "unaccepted"
	// RefusedLineage: both ends hold data, of different cluster lineages
	// (lineage.go): one of them is a machine of a majority lost for good,
	// come back after its cluster was recovered. Like RefusedVersion it
	// also counts outgoing connections so refused.
	RefusedLineage = "lineage"
)

// RefusalReasons lists every reason, in a fixed order.
var RefusalReasons = []string{RefusedAuth, RefusedProtocol, RefusedTLS, RefusedTimeout, RefusedIO, RefusedCapacity, RefusedSource, RefusedUnaccepted, RefusedVersion, RefusedLineage}

// Stats is a snapshot of a Mux's connection counters.
type Stats struct {
	// Pending is the number of accepted connections still in their
	// handshake (TLS, kind byte, authentication), at most MaxPending.
	Pending int
	// Refused counts accepted connections closed without being handed
	// over, by reason (every key of RefusalReasons is present).
	Refused map[string]uint64
	// DialAuthFailed counts outgoing connections abandoned because the
	// peer failed to prove the cluster secret or refused this node's proof.
	DialAuthFailed uint64
	// Established counts the authenticated connections handed to raft or
	// the internal channel (In) and returned by a dial (Out), by the
	// protocol version they negotiated. Without a secret there is no
	// handshake and nothing is counted.
	Established map[Negotiated]uint64
}

// Directions of an established connection, the label values of
// Stats.Established.
const (
	DirectionIn  = "in"
	DirectionOut = "out"
)

// Negotiated keys Stats.Established: which way a connection was opened and
// the protocol version it speaks.
type Negotiated struct {
	Direction string
	Protocol  uint16
}

type counters struct {
	refused        [10]atomic.Uint64 // indexed like RefusalReasons, one per reason
	dialAuthFailed atomic.Uint64

	mu          sync.Mutex
	established map[Negotiated]uint64
}

func (c *counters) establish(direction string, version uint16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.established == nil {
		c.established = make(map[Negotiated]uint64)
	}
	c.established[Negotiated{direction, version}]++
}

func (c *counters) refuse(reason string) {
	for i, r := range RefusalReasons {
		if r == reason {
			c.refused[i].Add(1)
			return
		}
	}
}

// Stats returns the connection counters.
func (m *Mux) Stats() Stats {
	m.mu.Lock()
	pending := len(m.pending)
	m.mu.Unlock()
	s := Stats{Pending: pending, Refused: make(map[string]uint64, len(RefusalReasons)), DialAuthFailed: m.count.dialAuthFailed.Load()}
	for i, r := range RefusalReasons {
		s.Refused[r] = m.count.refused[i].Load()
	}
	m.count.mu.Lock()
	s.Established = make(map[Negotiated]uint64, len(m.count.established))
	for k, v := range m.count.established {
		s.Established[k] = v
	}
	m.count.mu.Unlock()
	return s
}

// reasonOf classifies a handshake error.
func reasonOf(err error) string {
	var rf *refusal
	var te *tlsError
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return RefusedTimeout
	case errors.As(err, &rf):
		return rf.reason
	case errors.As(err, &te):
		return RefusedTLS
	default:
		return RefusedIO
	}
}

// refusalLogEvery spaces out warnings about refused connections, so a flood
// of bad connections cannot flood the log.
const refusalLogEvery = 10 * time.Second

// rateLimit lets one event per key through every refusalLogEvery and counts
// the ones it held back. The zero value is ready.
type rateLimit struct {
	mu   sync.Mutex
	last map[string]time.Time
	held map[string]uint64
}

func (r *rateLimit) allow(key string) bool {
	_, ok := r.allowCount(key)
	return ok
}

// allowCount reports whether an event for key may be logged now and, if so,
// how many were held back since the last one.
func (r *rateLimit) allowCount(key string) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last, r.held = map[string]time.Time{}, map[string]uint64{}
	}
	now := time.Now()
	if t, ok := r.last[key]; ok && now.Sub(t) < refusalLogEvery {
		r.held[key]++
		return 0, false
	}
	n := r.held[key]
	r.last[key], r.held[key] = now, 0
	return n, true
}
