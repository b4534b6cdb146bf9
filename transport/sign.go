package transport

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Headers carrying a request's signature. All three are required by
// VerifyRequest.
const (
	// HeaderTimestamp holds the signing time in Unix milliseconds.
	HeaderTimestamp = "X-Restarea-Timestamp"
	// HeaderNonce holds 16 random bytes in hex, fresh for every signature;
	// a ReplayGuard refuses a second request carrying the same one.
	HeaderNonce = "X-Restarea-Nonce"
	// HeaderSignature holds the hex HMAC-SHA256 of the request.
	HeaderSignature = "X-Restarea-Signature"
)

// nonceLen is the length of a nonce in hex characters (16 bytes).
const nonceLen = 32

// DefaultMaxSkew is the validity window VerifyRequest uses when given zero.
const DefaultMaxSkew = 30 * time.Second

// ErrUnauthenticated is wrapped by every VerifyRequest failure, so a handler
// can answer 401 with errors.Is and log the detail.
var ErrUnauthenticated = errors.New("transport: request not authenticated")

// SignRequest stamps r with the current time, a fresh nonce and an
// HMAC-SHA256, under the cluster secret, of r's method, path and query, the
// timestamp, the nonce and body. body must be exactly the bytes r will send.
// It overwrites any earlier signature headers, so a retried request can be
// signed again (and then counts as a new request).
func SignRequest(secret []byte, r *http.Request, body []byte) {
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	var n [nonceLen / 2]byte
	rand.Read(n[:]) // never fails (crypto/rand aborts the process instead)
	nonce := hex.EncodeToString(n[:])
	r.Header.Set(HeaderTimestamp, ts)
	r.Header.Set(HeaderNonce, nonce)
	r.Header.Set(HeaderSignature, hex.EncodeToString(mac(secret, r, ts, nonce, body)))
}

// Signed is what CheckHeaders learned from a request's signature headers.
type Signed struct {
	// Time is the signing time the request claims.
	Time time.Time
	// Nonce is the request's nonce, checked for form only.
	Nonce string
	sig   []byte
}

// CheckHeaders looks at r's signature headers only — presence, form, and a
// timestamp within maxSkew of now (either side, allowing for clock skew;
// zero means DefaultMaxSkew) — so that a handler can refuse an unsigned or
// stale request before reading a byte of its body. It proves nothing about
// who sent r: VerifyRequest does. Every error wraps ErrUnauthenticated.
func CheckHeaders(r *http.Request, maxSkew time.Duration) (Signed, error) {
	if maxSkew <= 0 {
		maxSkew = DefaultMaxSkew
	}
	ts := r.Header.Get(HeaderTimestamp)
	nonce := r.Header.Get(HeaderNonce)
	sig := r.Header.Get(HeaderSignature)
	if ts == "" || nonce == "" || sig == "" {
		return Signed{}, fmt.Errorf("%w: missing %s, %s or %s", ErrUnauthenticated, HeaderTimestamp, HeaderNonce, HeaderSignature)
	}
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return Signed{}, fmt.Errorf("%w: malformed timestamp", ErrUnauthenticated)
	}
	at := time.UnixMilli(ms)
	if age := time.Since(at); age > maxSkew || age < -maxSkew {
		return Signed{}, fmt.Errorf("%w: timestamp outside the %v window", ErrUnauthenticated, maxSkew)
	}
	if len(nonce) != nonceLen || !isLowerHex(nonce) {
		return Signed{}, fmt.Errorf("%w: malformed nonce", ErrUnauthenticated)
	}
	got, err := hex.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return Signed{}, fmt.Errorf("%w: malformed signature", ErrUnauthenticated)
	}
	return Signed{Time: at, Nonce: nonce, sig: got}, nil
}

// VerifyRequest accepts r only if CheckHeaders accepts its headers and the
// HMAC matches secret, method, path and query, timestamp, nonce and body
// (compared in constant time). An empty secret verifies nothing. It does not
// remember nonces: a ReplayGuard refuses a second use. Every error wraps
// ErrUnauthenticated.
func VerifyRequest(secret []byte, r *http.Request, body []byte, maxSkew time.Duration) error {
	if len(secret) == 0 {
		return fmt.Errorf("%w: no cluster secret configured", ErrUnauthenticated)
	}
	s, err := CheckHeaders(r, maxSkew)
	if err != nil {
		return err
	}
	return s.Verify(secret, r, body)
}

// Verify checks the HMAC of r, whose headers CheckHeaders returned s for,
// against secret and body. Errors wrap ErrUnauthenticated.
func (s Signed) Verify(secret []byte, r *http.Request, body []byte) error {
	if len(secret) == 0 {
		return fmt.Errorf("%w: no cluster secret configured", ErrUnauthenticated)
	}
	if !hmac.Equal(s.sig, mac(secret, r, r.Header.Get(HeaderTimestamp), s.Nonce, body)) {
		return fmt.Errorf("%w: bad signature", ErrUnauthenticated)
	}
	return nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// mac computes the signature. The fields are newline-separated after a
// version label; none but the body (which comes last) can contain a
// newline, so distinct requests never produce the same input. RequestURI is
// the escaped path plus query, and is the same on the sending side (full
// URL) and the receiving side.
func mac(secret []byte, r *http.Request, ts, nonce string, body []byte) []byte {
	method := r.Method
	if method == "" {
		method = http.MethodGet // how net/http sends an empty Method
	}
	h := hmac.New(sha256.New, secret)
	fmt.Fprintf(h, "restarea-request-v2\n%s\n%s\n%s\n%s\n", method, r.URL.RequestURI(), ts, nonce)
	h.Write(body)
	return h.Sum(nil)
}
