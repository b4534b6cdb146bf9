package transport

import (
	"encoding/hex"
	"fmt"
)

// The lineage fence (docs/disasters.md). A cluster recovered from a lost
// majority (restarea recover) draws a new lineage; the machines of the
// lost majority, if they come back with their old data, still hold the
// old one. Their old configuration names the survivor and each other, so
// without a fence two of them could elect a leader of that configuration
// and take writes, or one could overwrite the survivor's log as the leader
// of a higher term. The version-2 handshake therefore carries each end's
// Identity inside the proofs of the cluster secret, and a connection
// between two nodes that both hold data of different lineages is refused
// on both ends, before raft or the internal channel sees a byte.

// LineageSize is the length of a lineage id.
const LineageSize = 16

// Lineage names one history of a cluster's data. The zero Lineage is the
// history every cluster starts with and keeps until it is recovered.
type Lineage [LineageSize]byte

// IsZero reports whether l is the lineage of a cluster never recovered.
func (l Lineage) IsZero() bool { return l == Lineage{} }

// String is the lineage in hex, "0" for the zero lineage.
func (l Lineage) String() string {
	if l.IsZero() {
		return "0"
	}
	return hex.EncodeToString(l[:])
}

// Identity is what a node's data says about the cluster it belongs to, as
// the handshake carries it.
type Identity struct {
	// Lineage is the history the node's data belongs to; Parent the one it
	// was recovered from (zero for a first recovery and for a cluster
	// never recovered).
	Lineage, Parent Lineage
	// HasState is false for a node whose log and snapshots are empty: a
	// new or wiped node, which may join a cluster of any lineage and
	// takes the lineage of the snapshot it is sent.
	HasState bool
}

// identitySize is an Identity on the wire: flags ‖ lineage ‖ parent.
const identitySize = 1 + 2*LineageSize

func (id Identity) appendTo(b []byte) []byte {
	var flags byte
	if id.HasState {
		flags = 1
	}
	b = append(b, flags)
	b = append(b, id.Lineage[:]...)
	return append(b, id.Parent[:]...)
}

func parseIdentity(b []byte) (Identity, error) {
	var id Identity
	if len(b) != identitySize {
		return id, &refusal{reason: RefusedProtocol, msg: fmt.Sprintf("authentication: identity of %d bytes; want %d", len(b), identitySize)}
	}
	if b[0] > 1 {
		return id, &refusal{reason: RefusedProtocol, msg: fmt.Sprintf("authentication: identity flags %#x", b[0])}
	}
	id.HasState = b[0] == 1
	copy(id.Lineage[:], b[1:])
	copy(id.Parent[:], b[1+LineageSize:])
	return id, nil
}

// fenced is true for an identity the v1 handshake cannot serve: v1 (release
// v0.1.0) carries no identity, so a node whose data is of a recovered
// lineage cannot tell whether a v1 peer belongs to it.
func (id Identity) fenced() bool { return id.HasState && !id.Lineage.IsZero() }

// Verdict is what the fence decided for one connection.
type Verdict int

const (
	// VerdictSame: the two ends may talk (the same lineage, or one of them
	// holds no data yet).
	VerdictSame Verdict = iota
	// VerdictPeerStale: the peer's data is from before this node's
	// cluster was recovered; the peer must be wiped.
	VerdictPeerStale
	// VerdictSelfStale: this node's data is from before the peer's
	// cluster was recovered; this node must be wiped.
	VerdictSelfStale
	// VerdictOther: the two hold data of unrelated lineages.
	VerdictOther
)

// judge decides whether a node of identity mine may talk to a peer of
// identity peer. Both ends run it on the same two identities, so they
// agree.
func judge(mine, peer Identity) Verdict {
	switch {
	case !mine.HasState || !peer.HasState || mine.Lineage == peer.Lineage:
		return VerdictSame
	case peer.Lineage == mine.Parent:
		return VerdictPeerStale
	case mine.Lineage == peer.Parent:
		return VerdictSelfStale
	}
	return VerdictOther
}

// StaleError is the refusal of a connection by the lineage fence. Its
// message says which end must be wiped.
type StaleError struct {
	Verdict    Verdict
	Mine, Peer Identity
	// V1 is set when the peer spoke protocol version 1, which carries no
	// identity, to a node whose data is of a recovered lineage.
	V1 bool
}

func (e *StaleError) Error() string {
	const how = "stop it, delete its data directory and start it again to join as a new member (docs/disasters.md)"
	switch {
	case e.V1:
		return fmt.Sprintf("lineage fence: this node's data is of recovered lineage %s and the peer speaks protocol version 1 (release v0.1.0), which cannot show its lineage: refused; a node of the lost majority must not come back with its data: %s", e.Mine.Lineage, how)
	case e.Verdict == VerdictPeerStale:
		return fmt.Sprintf("lineage fence: the peer's data is of lineage %s, from before this cluster was recovered (lineage %s): refused; the peer is a machine of the lost majority: %s", e.Peer.Lineage, e.Mine.Lineage, how)
	case e.Verdict == VerdictSelfStale:
		return fmt.Sprintf("lineage fence: this node's data is of lineage %s, from before the peer's cluster was recovered (lineage %s): this node is a machine of the lost majority and must not serve: %s", e.Mine.Lineage, e.Peer.Lineage, how)
	}
	return fmt.Sprintf("lineage fence: this node's data is of lineage %s, the peer's of lineage %s, and neither was recovered from the other: refused; one of them belongs to another cluster or to a cluster recovered more than once since: wipe the one whose data is stale (docs/disasters.md)", e.Mine.Lineage, e.Peer.Lineage)
}

// fence returns the refusal for a connection between mine and peer, or
// nil when they may talk.
func fence(mine, peer Identity) error {
	if v := judge(mine, peer); v != VerdictSame {
		return &refusal{reason: RefusedLineage, msg: (&StaleError{Verdict: v, Mine: mine, Peer: peer}).Error(), stale: &StaleError{Verdict: v, Mine: mine, Peer: peer}}
	}
	return nil
}

// fenceV1 refuses a version-1 connection when this node's data is of a
// recovered lineage.
func fenceV1(mine Identity) error {
	if !mine.fenced() {
		return nil
	}
	e := &StaleError{Mine: mine, V1: true}
	return &refusal{reason: RefusedLineage, msg: e.Error(), stale: e}
}
