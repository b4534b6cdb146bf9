package transport

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
)

// The connection handshake proves, before raft or the internal channel read
// a byte, that both ends of a connection hold the cluster secret. It runs
// right after the kind byte (inside TLS when TLS is on):
//
//	dialer   → acceptor  kind ‖ "RAU1" ‖ nonceD            (1+4+32 bytes)
//	acceptor → dialer    nonceA                            (32 bytes)
//	dialer   → acceptor  HMAC(K, transcript("D"))          (32 bytes)
//	acceptor → dialer    HMAC(K, transcript("A"))          (32 bytes, only if the dialer's proof matched)
//
// K = HMAC-SHA256(secret, keyLabel), so the handshake never uses the key
// that signs internal requests. transcript(role) = proofLabel ‖ kind ‖
// role ‖ nonceD ‖ nonceA ‖ binding, where binding is 32 bytes of TLS keying
// material (RFC 8446 exporter) when TLS is on and empty otherwise: a proof
// is valid for one connection (both nonces are fresh), one kind (a proof for
// the internal channel cannot open a raft connection), one direction, and
// with TLS one TLS session. Proofs are compared in constant time.
//
// That is protocol version 1, release v0.1.0's handshake, still accepted
// and still spoken to a peer that speaks nothing newer. Version 2 (authv2.go)
// negotiates the protocol version inside the same proofs; the magic after
// the kind byte says which handshake follows.
//
// The kind byte comes first, as it did before authentication existed, so
// a stray client (a TLS ClientHello, an HTTP request) is refused on its
// first byte without costing a nonce or an HMAC, and the kind can enter the
// transcript. The dialer proves itself first: the acceptor, the side that
// strangers reach, reveals nothing but a random nonce to someone who does
// not hold the secret. The dialer in turn checks the acceptor's proof
// before it returns the connection, so a node never sends raft data or a
// signed request to an impostor.

const (
	nonceSize  = 32
	proofSize  = sha256.Size
	keyLabel   = "restarea transport connection key v1"
	proofLabel = "restarea transport connection proof v1"
	// exporterLabel names the TLS keying material the proofs are bound to.
	exporterLabel = "EXPORTER-restarea-connection-auth"
	roleDialer    = 'D'
	roleAcceptor  = 'A'
)

// authMagic follows the kind byte on a version-1 connection, authMagicV2 on
// a version-2 one. A node of an earlier version (or one without a secret)
// sends raft or HTTP bytes there instead, so the acceptor can say what went
// wrong at once rather than wait out the handshake deadline.
var (
	authMagic   = [4]byte{'R', 'A', 'U', '1'}
	authMagicV2 = [4]byte{'R', 'A', 'U', '2'}
)

// connAuth runs the handshake under one cluster secret.
type connAuth struct {
	key []byte
	// versions is the range this node speaks; legacy makes it speak exactly
	// what release v0.1.0 did (version 1 only, and a version-2 greeting
	// refused as an unknown magic), for the tests of the fallback.
	versions VersionRange
	legacy   bool
}

// newConnAuth derives the handshake key; nil (no handshake) for an empty
// secret.
func newConnAuth(secret []byte, versions VersionRange, legacy bool) *connAuth {
	if len(secret) == 0 {
		return nil
	}
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(keyLabel))
	return &connAuth{key: h.Sum(nil), versions: versions, legacy: legacy}
}

// proof is the version-1 proof; its transcript is release v0.1.0's, byte
// for byte.
func (a *connAuth) proof(kind, role byte, nonceD, nonceA, binding []byte) []byte {
	h := hmac.New(sha256.New, a.key)
	h.Write([]byte(proofLabel))
	h.Write([]byte{kind, role})
	h.Write(nonceD)
	h.Write(nonceA)
	h.Write(binding)
	return h.Sum(nil)
}

// refusal is a handshake failure with the reason it is counted under.
type refusal struct {
	reason string
	msg    string
	// stale, for RefusedLineage, is the fence's verdict.
	stale *StaleError
	// version, for RefusedVersion, says it again naming the peer.
	version *versionError
}

func (e *refusal) Error() string { return e.msg }

// Unwrap gives the lineage fence's verdict to errors.As (*StaleError).
func (e *refusal) Unwrap() error {
	if e.stale != nil {
		return e.stale
	}
	return nil
}

// What a dialer sees when the acceptor closes the connection: before its
// nonce (it does not speak the handshake, or is over its connection cap),
// or instead of its proof (it refused this node's).
var (
	errPeerNoHandshake  = errors.New("the peer closed the connection before authenticating: it runs an earlier version without authenticated connections, has no --cluster-secret, or is over its cap of connections in handshake")
	errPeerRefusedProof = errors.New("the peer refused this node's proof of the cluster secret: it holds a different --cluster-secret")
)

// hello is what the dialer sends first: the kind byte, then, with a secret,
// the version-1 magic and its nonce. Sending them in one write saves a
// packet.
func (a *connAuth) hello(kind byte) (msg, nonceD []byte, err error) {
	if a == nil {
		return []byte{kind}, nil, nil
	}
	nonceD = make([]byte, nonceSize)
	if _, err := rand.Read(nonceD); err != nil {
		return nil, nil, err
	}
	msg = make([]byte, 0, 1+len(authMagic)+nonceSize)
	msg = append(msg, kind)
	msg = append(msg, authMagic[:]...)
	msg = append(msg, nonceD...)
	return msg, nonceD, nil
}

// dial runs the dialer's side of version 1 after hello was written: it
// proves itself and checks the acceptor's proof. Any error means the
// connection must not be used.
func (a *connAuth) dial(conn net.Conn, kind byte, nonceD, binding []byte) error {
	nonceA := make([]byte, nonceSize)
	if _, err := io.ReadFull(conn, nonceA); err != nil {
		return fmt.Errorf("authentication: read peer nonce: %w", closedAs(err, errPeerNoHandshake))
	}
	return a.finishDial(conn, a.proof(kind, roleDialer, nonceD, nonceA, binding), a.proof(kind, roleAcceptor, nonceD, nonceA, binding))
}

// finishDial sends the dialer's proof and checks the acceptor's.
func (a *connAuth) finishDial(conn net.Conn, mine, want []byte) error {
	if _, err := conn.Write(mine); err != nil {
		return fmt.Errorf("authentication: send proof: %w", err)
	}
	got := make([]byte, proofSize)
	if _, err := io.ReadFull(conn, got); err != nil {
		return fmt.Errorf("authentication: read peer proof: %w", closedAs(err, errPeerRefusedProof))
	}
	if !hmac.Equal(got, want) {
		return &refusal{reason: RefusedAuth, msg: "authentication: the peer's proof does not match this node's cluster secret: it is not a member of this cluster"}
	}
	return nil
}

// closedAs replaces a read error that means "the peer hung up" (EOF, or a
// reset: a peer that closes with unread data resets) by what it means here.
func closedAs(err, meaning error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return meaning
	}
	return err
}

// accept runs the acceptor's side once the kind byte has been read: it
// reads the magic, which says which handshake follows, and returns the
// protocol version the connection speaks.
func (a *connAuth) accept(conn net.Conn, kind byte, binding []byte, mine Identity) (uint16, Identity, error) {
	var magic [len(authMagic)]byte
	if _, err := io.ReadFull(conn, magic[:]); err != nil {
		return 0, Identity{}, fmt.Errorf("authentication: read greeting: %w", err)
	}
	switch {
	case magic == authMagic && (a.legacy || a.versions.Min <= 1):
		if err := a.acceptV1(conn, kind, binding); err != nil {
			return 0, Identity{}, err
		}
		return 1, Identity{}, fenceV1(mine)
	case magic == authMagic:
		return 0, Identity{}, versionRefusal(versionError{peer: VersionRange{1, 1}, ours: a.versions})
	case magic == authMagicV2 && !a.legacy:
		return a.acceptV2(conn, kind, binding, mine)
	}
	return 0, Identity{}, &refusal{reason: RefusedProtocol, msg: "authentication: the peer sent no authentication greeting (a node of an earlier version, one without --cluster-secret, or not a cluster member)"}
}

// acceptV1 is release v0.1.0's acceptor after the magic: it reads the
// dialer's nonce, sends its own, checks the dialer's proof and only then
// proves itself.
func (a *connAuth) acceptV1(conn net.Conn, kind byte, binding []byte) error {
	nonceD := make([]byte, nonceSize)
	if _, err := io.ReadFull(conn, nonceD); err != nil {
		return fmt.Errorf("authentication: read nonce: %w", err)
	}
	nonceA := make([]byte, nonceSize)
	if _, err := rand.Read(nonceA); err != nil {
		return err
	}
	if _, err := conn.Write(nonceA); err != nil {
		return fmt.Errorf("authentication: send nonce: %w", err)
	}
	return a.finishAccept(conn, a.proof(kind, roleDialer, nonceD, nonceA, binding), a.proof(kind, roleAcceptor, nonceD, nonceA, binding))
}

// finishAccept checks the dialer's proof (constant time) and only then
// sends the acceptor's.
func (a *connAuth) finishAccept(conn net.Conn, want, mine []byte) error {
	got := make([]byte, proofSize)
	if _, err := io.ReadFull(conn, got); err != nil {
		return fmt.Errorf("authentication: read proof: %w", err)
	}
	if !hmac.Equal(got, want) {
		return &refusal{reason: RefusedAuth, msg: "authentication: wrong proof of the cluster secret (the peer holds a different --cluster-secret or none)"}
	}
	if _, err := conn.Write(mine); err != nil {
		return fmt.Errorf("authentication: send proof: %w", err)
	}
	return nil
}

// tlsBinding returns the keying material that ties the proofs to conn's TLS
// session, or nil on a plain connection.
func tlsBinding(conn net.Conn) ([]byte, error) {
	tc, ok := conn.(*tls.Conn)
	if !ok {
		return nil, nil
	}
	st := tc.ConnectionState()
	b, err := st.ExportKeyingMaterial(exporterLabel, nil, 32)
	if err != nil {
		return nil, fmt.Errorf("authentication: TLS keying material: %w", err)
	}
	return b, nil
}
