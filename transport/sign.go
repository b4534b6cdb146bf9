package transport

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Headers carrying a request's signature. Both are required by VerifyRequest.
const (
	// HeaderTimestamp holds the signing time in Unix milliseconds.
	HeaderTimestamp = "X-Restarea-Timestamp"
	// HeaderSignature holds the hex HMAC-SHA256 of the request.
	HeaderSignature = "X-Restarea-Signature"
)

// DefaultMaxSkew is the replay window VerifyRequest uses when given zero.
const DefaultMaxSkew = 30 * time.Second

// ErrUnauthenticated is wrapped by every VerifyRequest failure, so a handler
// can answer 401 with errors.Is and log the detail.
var ErrUnauthenticated = errors.New("transport: request not authenticated")

// SignRequest stamps r with the current time and an HMAC-SHA256, under the
// cluster secret, of r's method, path and query, the timestamp and body.
// body must be exactly the bytes r will send. It overwrites any earlier
// signature headers, so a retried request can be signed again.
func SignRequest(secret []byte, r *http.Request, body []byte) {
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	r.Header.Set(HeaderTimestamp, ts)
	r.Header.Set(HeaderSignature, hex.EncodeToString(mac(secret, r, ts, body)))
}

// VerifyRequest accepts r only if its signature headers are present, its
// timestamp lies within maxSkew of now (either side, allowing for clock
// skew; zero means DefaultMaxSkew), and the HMAC matches secret, method,
// path and query, timestamp and body (compared in constant time). An empty
// secret verifies nothing. Within the window an intercepted request could be
// replayed; with mutual TLS it cannot be intercepted, and internal commands
// carry a request_id that makes a replay a no-op. Every error wraps
// ErrUnauthenticated.
func VerifyRequest(secret []byte, r *http.Request, body []byte, maxSkew time.Duration) error {
	if len(secret) == 0 {
		return fmt.Errorf("%w: no cluster secret configured", ErrUnauthenticated)
	}
	if maxSkew <= 0 {
		maxSkew = DefaultMaxSkew
	}
	ts := r.Header.Get(HeaderTimestamp)
	sig := r.Header.Get(HeaderSignature)
	if ts == "" || sig == "" {
		return fmt.Errorf("%w: missing %s or %s", ErrUnauthenticated, HeaderTimestamp, HeaderSignature)
	}
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: malformed timestamp", ErrUnauthenticated)
	}
	if age := time.Since(time.UnixMilli(ms)); age > maxSkew || age < -maxSkew {
		return fmt.Errorf("%w: timestamp outside the %v window", ErrUnauthenticated, maxSkew)
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return fmt.Errorf("%w: malformed signature", ErrUnauthenticated)
	}
	if !hmac.Equal(got, mac(secret, r, ts, body)) {
		return fmt.Errorf("%w: bad signature", ErrUnauthenticated)
	}
	return nil
}

// mac computes the signature. The fields are newline-separated; none but the
// body (which comes last) can contain a newline, so distinct requests never
// produce the same input. RequestURI is the escaped path plus query, and is
// the same on the sending side (full URL) and the receiving side.
func mac(secret []byte, r *http.Request, ts string, body []byte) []byte {
	method := r.Method
	if method == "" {
		method = http.MethodGet // how net/http sends an empty Method
	}
	h := hmac.New(sha256.New, secret)
	fmt.Fprintf(h, "%s\n%s\n%s\n", method, r.URL.RequestURI(), ts)
	h.Write(body)
	return h.Sum(nil)
}
