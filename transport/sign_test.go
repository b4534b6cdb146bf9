package transport

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

var secret = []byte("cluster-secret-for-tests")

// signed builds a client-side request and signs it, then returns the
// server-side view of the same request, as a handler would see it.
func signed(t *testing.T, method, target string, body []byte) *http.Request {
	t.Helper()
	out, err := http.NewRequest(method, "http://127.0.0.1:8300"+target, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	SignRequest(secret, out, body)
	in := httptest.NewRequest(method, target, strings.NewReader(string(body)))
	in.Header = out.Header.Clone()
	return in
}

func TestVerifyRequest(t *testing.T) {
	body := []byte(`{"request_id":"r1","text":"hi"}`)
	good := func() *http.Request { return signed(t, http.MethodPost, "/internal/apply?x=1", body) }

	if err := VerifyRequest(secret, good(), body, time.Minute); err != nil {
		t.Fatalf("good signature refused: %v", err)
	}

	stale := good()
	old := time.Now().Add(-2 * time.Minute).UnixMilli()
	stale.Header.Set(HeaderTimestamp, strconv.FormatInt(old, 10))
	future := good()
	future.Header.Set(HeaderTimestamp, strconv.FormatInt(time.Now().Add(2*time.Minute).UnixMilli(), 10))
	changedPath := good()
	changedPath.URL.Path = "/internal/join"
	changedQuery := good()
	changedQuery.URL.RawQuery = "x=2"
	changedMethod := good()
	changedMethod.Method = http.MethodPut
	noTimestamp := good()
	noTimestamp.Header.Del(HeaderTimestamp)
	noSignature := good()
	noSignature.Header.Del(HeaderSignature)
	badHex := good()
	badHex.Header.Set(HeaderSignature, "zz")
	badTimestamp := good()
	badTimestamp.Header.Set(HeaderTimestamp, "yesterday")
	noNonce := good()
	noNonce.Header.Del(HeaderNonce)
	changedNonce := good()
	changedNonce.Header.Set(HeaderNonce, strings.Repeat("0", nonceLen))
	badNonce := good()
	badNonce.Header.Set(HeaderNonce, strings.Repeat("Z", nonceLen))

	for _, tc := range []struct {
		name   string
		secret []byte
		r      *http.Request
		body   []byte
	}{
		{"wrong secret", []byte("another secret"), good(), body},
		{"empty secret", nil, good(), body},
		{"changed body", secret, good(), []byte(`{"request_id":"r1","text":"HI"}`)},
		{"changed path", secret, changedPath, body},
		{"changed query", secret, changedQuery, body},
		{"changed method", secret, changedMethod, body},
		{"stale timestamp", secret, stale, body},
		{"future timestamp", secret, future, body},
		{"missing timestamp", secret, noTimestamp, body},
		{"missing signature", secret, noSignature, body},
		{"malformed signature", secret, badHex, body},
		{"malformed timestamp", secret, badTimestamp, body},
		{"missing nonce", secret, noNonce, body},
		{"changed nonce", secret, changedNonce, body},
		{"malformed nonce", secret, badNonce, body},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyRequest(tc.secret, tc.r, tc.body, time.Minute)
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("VerifyRequest = %v; want ErrUnauthenticated", err)
			}
		})
	}
}

func TestSignRequestOverwritesOldSignature(t *testing.T) {
	body := []byte("b")
	r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:8300/p", nil)
	if err != nil {
		t.Fatal(err)
	}
	SignRequest([]byte("old secret"), r, body)
	SignRequest(secret, r, body)
	if n := len(r.Header.Values(HeaderSignature)); n != 1 {
		t.Fatalf("%d signature headers after re-signing", n)
	}
	if err := VerifyRequest(secret, r, body, 0); err != nil {
		t.Fatalf("re-signed request refused: %v", err)
	}
}

func TestSignedRequestOverInternalChannel(t *testing.T) {
	p := newPKI(t)
	a, b := listen(t, p.nodeTLS("a"), 0), listen(t, p.nodeTLS("b"), 0)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if err := VerifyRequest(secret, r, body, 0); err != nil {
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
			w.Write(body)
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go srv.Serve(a.RPCListener())
	t.Cleanup(func() { srv.Close() })

	c := b.HTTPClient(5 * time.Second)
	defer c.CloseIdleConnections()
	send := func(sign bool) int {
		body := []byte(`{"cmd":"post"}`)
		req, err := http.NewRequest(http.MethodPost, "http://"+a.Addr().String()+"/internal/apply?id=%C3%A9", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if sign {
			SignRequest(secret, req, body)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if got := send(true); got != http.StatusOK {
		t.Fatalf("signed request: status %d", got)
	}
	if got := send(false); got != http.StatusUnauthorized {
		t.Fatalf("unsigned request: status %d", got)
	}
}
