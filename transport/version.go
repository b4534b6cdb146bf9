package transport

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Raft-port protocol versions this release speaks. Version 1 is the
// handshake of release v0.1.0 (magic "RAU1", no version field); version 2
// adds the negotiation of auth.go. Every release keeps speaking the versions
// of the release before it, so that a rolling upgrade (release N beside
// N-1) always finds a common version.
const (
	// ProtocolMin is the oldest version this release accepts and offers.
	ProtocolMin = 1
	// ProtocolMax is the newest version this release speaks; two nodes of
	// this release negotiate it.
	ProtocolMax = 2
)

// VersionRange is a closed range of raft-port protocol versions, Min to
// Max. The zero value means "this release's range" (ProtocolMin to
// ProtocolMax) where a Config takes one.
type VersionRange struct {
	Min, Max uint16
}

// ThisRelease is the range this release speaks.
var ThisRelease = VersionRange{ProtocolMin, ProtocolMax}

// String writes the range as "MIN-MAX", or "N" when it holds one version.
func (r VersionRange) String() string {
	if r.Min == r.Max {
		return strconv.Itoa(int(r.Min))
	}
	return fmt.Sprintf("%d-%d", r.Min, r.Max)
}

// Valid reports why r cannot be spoken: version 0 does not exist, and Min
// must not be above Max.
func (r VersionRange) Valid() error {
	if r.Min == 0 || r.Max == 0 {
		return fmt.Errorf("protocol versions %d-%d: version 0 does not exist (versions start at 1)", r.Min, r.Max)
	}
	if r.Min > r.Max {
		return fmt.Errorf("protocol versions %d-%d: the minimum is above the maximum", r.Min, r.Max)
	}
	return nil
}

// highestCommon returns the highest version both ranges hold, or 0 if they
// do not overlap.
func (r VersionRange) highestCommon(o VersionRange) uint16 {
	lo, hi := max(r.Min, o.Min), min(r.Max, o.Max)
	if lo > hi {
		return 0
	}
	return hi
}

// ParseVersionRange reads "MIN-MAX" (or "N", a single version), as given to
// `restarea serve --test-protocol-versions`.
func ParseVersionRange(s string) (VersionRange, error) {
	lo, hi, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		hi = lo
	}
	a, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
	b, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
	if err1 != nil || err2 != nil {
		return VersionRange{}, fmt.Errorf("protocol versions %q: want MIN-MAX such as 1-2, each from 1 to 65535", s)
	}
	r := VersionRange{uint16(a), uint16(b)}
	return r, r.Valid()
}

// versionError is why two nodes were refused for sharing no protocol
// version: they run releases more than one apart. It names both ranges,
// the one line an operator needs.
type versionError struct {
	peer, ours VersionRange
	// v1Only: the peer's range was not announced but inferred, because it
	// closed the connection at this node's version-2 greeting.
	v1Only bool
}

// describe says it of subject ("the peer", "peer 10.0.0.3:8300").
func (e versionError) describe(subject string) string {
	peer := "speaks raft-port protocol " + e.peer.String()
	if e.v1Only {
		peer = "closed the connection at this node's protocol-2 greeting, so it speaks only raft-port protocol 1 (or was over its handshake cap)"
	}
	return fmt.Sprintf("%s %s; this node speaks %s: run releases at most one apart, see docs/upgrades.md", subject, peer, e.ours)
}

// versionRefusal is the refusal, counted as RefusedVersion, for e.
func versionRefusal(e versionError) *refusal {
	return &refusal{reason: RefusedVersion, msg: e.describe("the peer"), version: &e}
}

// logLine is the warning about a version refusal of the peer at addr.
func (rf *refusal) logLine(addr string) string {
	if rf.version == nil {
		return rf.msg
	}
	return rf.version.describe("peer " + addr)
}

// errPeerClosedAtV2 is what a dialer sees when the acceptor closes the
// connection instead of answering a version-2 greeting: release v0.1.0
// reads the kind byte and four bytes of magic, finds them unknown and
// closes without writing. It is the cue to try again with version 1.
var errPeerClosedAtV2 = errors.New("the peer closed the connection at the protocol-2 greeting")
