package transport

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net"
)

// The version-2 handshake negotiates the protocol version within the proof
// of the secret:
//
//	dialer   → acceptor  kind ‖ "RAU2" ‖ dmin ‖ dmax ‖ nonceD ‖ idD  (1+4+2+2+32+33 bytes)
//	acceptor → dialer    chosen ‖ amin ‖ amax ‖ nonceA ‖ idA        (2+2+2+32+33 bytes)
//	                     or, with no common version, 0 ‖ amin ‖ amax (6 bytes), then close
//	dialer   → acceptor  HMAC(K, transcript2("D"))                  (32 bytes)
//	acceptor → dialer    HMAC(K, transcript2("A"))                  (32 bytes, only if the dialer's proof matched)
//
// Versions are big-endian uint16; chosen is the highest version both ranges
// hold. transcript2(role) = proofLabelV2 ‖ kind ‖ role ‖ dmin ‖ dmax ‖ amin ‖
// amax ‖ chosen ‖ nonceD ‖ nonceA ‖ idD ‖ idA ‖ binding: both ranges, the
// choice and both identities are proven by both ends, so someone without
// the secret who rewrites either range or the choice (to push two new
// nodes down to an old version), or an identity (to fence a member off or
// let a stale one in), breaks both proofs and the connection is closed.
// Its own label keeps a version-2 proof from ever passing as a version-1
// one.
//
// id is an Identity (lineage.go): flags ‖ lineage ‖ parent (1+16+16
// bytes). Once both proofs passed, each end judges the two identities the
// same way and both close a connection the lineage fence refuses. (No
// release spoke version 2 before identities were added to it.)
//
// Before the proofs the acceptor reveals its range (and, with no common
// version, closes): that much a stranger learns, so that a dialer can name
// both ranges when they do not overlap.

const (
	proofLabelV2 = "restarea transport connection proof v2"
	helloV2Size  = len(authMagicV2) + 4 + nonceSize + identitySize // after the kind byte
	answerV2Head = 6                                               // chosen ‖ amin ‖ amax
)

func (a *connAuth) proofV2(kind, role byte, d, acc VersionRange, chosen uint16, nonceD, nonceA []byte, idD, idA Identity, binding []byte) []byte {
	h := hmac.New(sha256.New, a.key)
	h.Write([]byte(proofLabelV2))
	h.Write([]byte{kind, role})
	var v [10]byte
	binary.BigEndian.PutUint16(v[0:], d.Min)
	binary.BigEndian.PutUint16(v[2:], d.Max)
	binary.BigEndian.PutUint16(v[4:], acc.Min)
	binary.BigEndian.PutUint16(v[6:], acc.Max)
	binary.BigEndian.PutUint16(v[8:], chosen)
	h.Write(v[:])
	h.Write(nonceD)
	h.Write(nonceA)
	h.Write(idD.appendTo(nil))
	h.Write(idA.appendTo(nil))
	h.Write(binding)
	return h.Sum(nil)
}

// helloV2 is the dialer's first write of a version-2 connection.
func (a *connAuth) helloV2(kind byte, mine Identity) (msg, nonceD []byte, err error) {
	nonceD = make([]byte, nonceSize)
	if _, err := rand.Read(nonceD); err != nil {
		return nil, nil, err
	}
	msg = make([]byte, 0, 1+helloV2Size)
	msg = append(msg, kind)
	msg = append(msg, authMagicV2[:]...)
	msg = binary.BigEndian.AppendUint16(msg, a.versions.Min)
	msg = binary.BigEndian.AppendUint16(msg, a.versions.Max)
	msg = append(msg, nonceD...)
	msg = mine.appendTo(msg)
	return msg, nonceD, nil
}

// dialV2 runs the dialer's side after helloV2 was written and returns the
// version negotiated and the acceptor's identity. errPeerClosedAtV2 means
// the acceptor hung up without answering (release v0.1.0 does so); a
// version refusal that the ranges do not overlap; a lineage refusal that
// the lineage fence refused the two identities.
func (a *connAuth) dialV2(conn net.Conn, kind byte, nonceD, binding []byte, mine Identity) (uint16, Identity, error) {
	var head [answerV2Head]byte
	if _, err := io.ReadFull(conn, head[:]); err != nil {
		return 0, Identity{}, fmt.Errorf("authentication: read peer version: %w", closedAs(err, errPeerClosedAtV2))
	}
	chosen := binary.BigEndian.Uint16(head[0:])
	acc := VersionRange{binary.BigEndian.Uint16(head[2:]), binary.BigEndian.Uint16(head[4:])}
	if err := acc.Valid(); err != nil {
		return 0, Identity{}, &refusal{reason: RefusedProtocol, msg: "authentication: the peer answered a garbled version range: " + err.Error()}
	}
	want := a.versions.highestCommon(acc)
	if chosen == 0 && want == 0 {
		return 0, Identity{}, versionRefusal(versionError{peer: acc, ours: a.versions})
	}
	if chosen != want {
		return 0, Identity{}, &refusal{reason: RefusedProtocol, msg: fmt.Sprintf("authentication: the peer chose protocol version %d from %s and %s; the highest common one is %d", chosen, a.versions, acc, want)}
	}
	tail := make([]byte, nonceSize+identitySize)
	if _, err := io.ReadFull(conn, tail); err != nil {
		return 0, Identity{}, fmt.Errorf("authentication: read peer nonce: %w", closedAs(err, errPeerNoHandshake))
	}
	nonceA := tail[:nonceSize]
	peerID, err := parseIdentity(tail[nonceSize:])
	if err != nil {
		return 0, Identity{}, err
	}
	myProof := a.proofV2(kind, roleDialer, a.versions, acc, chosen, nonceD, nonceA, mine, peerID, binding)
	peerProof := a.proofV2(kind, roleAcceptor, a.versions, acc, chosen, nonceD, nonceA, mine, peerID, binding)
	if err := a.finishDial(conn, myProof, peerProof); err != nil {
		return 0, Identity{}, err
	}
	if err := fence(mine, peerID); err != nil {
		return 0, peerID, err
	}
	return chosen, peerID, nil
}

// acceptV2 runs the acceptor's side after the "RAU2" magic: it reads the
// dialer's range, nonce and identity, picks the highest common version (or
// answers that there is none and refuses), then checks the dialer's proof
// before proving itself, and last applies the lineage fence.
func (a *connAuth) acceptV2(conn net.Conn, kind byte, binding []byte, mine Identity) (uint16, Identity, error) {
	var rest [helloV2Size - len(authMagicV2)]byte
	if _, err := io.ReadFull(conn, rest[:]); err != nil {
		return 0, Identity{}, fmt.Errorf("authentication: read version range and nonce: %w", err)
	}
	d, nonceD, peerID, err := parseHelloV2(rest[:])
	if err != nil {
		return 0, Identity{}, err
	}
	chosen := a.versions.highestCommon(d)
	answer := make([]byte, 0, answerV2Head+nonceSize)
	answer = binary.BigEndian.AppendUint16(answer, chosen)
	answer = binary.BigEndian.AppendUint16(answer, a.versions.Min)
	answer = binary.BigEndian.AppendUint16(answer, a.versions.Max)
	if chosen == 0 {
		// The dialer learns both ranges and can say why; nothing else
		// crosses, and the connection never reaches raft.
		conn.Write(answer)
		return 0, Identity{}, versionRefusal(versionError{peer: d, ours: a.versions})
	}
	nonceA := make([]byte, nonceSize)
	if _, err := rand.Read(nonceA); err != nil {
		return 0, Identity{}, err
	}
	answer = append(answer, nonceA...)
	if _, err := conn.Write(mine.appendTo(answer)); err != nil {
		return 0, Identity{}, fmt.Errorf("authentication: send version and nonce: %w", err)
	}
	want := a.proofV2(kind, roleDialer, d, a.versions, chosen, nonceD, nonceA, peerID, mine, binding)
	myProof := a.proofV2(kind, roleAcceptor, d, a.versions, chosen, nonceD, nonceA, peerID, mine, binding)
	if err := a.finishAccept(conn, want, myProof); err != nil {
		return 0, Identity{}, err
	}
	if err := fence(mine, peerID); err != nil {
		return 0, peerID, err
	}
	return chosen, peerID, nil
}

// parseHelloV2 reads dmin ‖ dmax ‖ nonceD ‖ idD, the part of a version-2
// greeting after its magic. A wrong length, an impossible range or
// unknown identity flags are a protocol refusal naming the field.
func parseHelloV2(b []byte) (VersionRange, []byte, Identity, error) {
	if len(b) != 4+nonceSize+identitySize {
		return VersionRange{}, nil, Identity{}, &refusal{reason: RefusedProtocol, msg: fmt.Sprintf("authentication: version-2 greeting of %d bytes after its magic; want %d", len(b), 4+nonceSize+identitySize)}
	}
	d := VersionRange{binary.BigEndian.Uint16(b[0:]), binary.BigEndian.Uint16(b[2:])}
	if err := d.Valid(); err != nil {
		return VersionRange{}, nil, Identity{}, &refusal{reason: RefusedProtocol, msg: "authentication: the peer announced a garbled version range: " + err.Error()}
	}
	id, err := parseIdentity(b[4+nonceSize:])
	if err != nil {
		return VersionRange{}, nil, Identity{}, err
	}
	return d, b[4 : 4+nonceSize], id, nil
}
