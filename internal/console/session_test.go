package console

import (
	"encoding/base64"
	"testing"
	"time"
)

func TestSessionCookie(t *testing.T) {
	k := deriveKeys("session-test-token-0123456789")
	now := time.Unix(1_800_000_000, 0)
	sess, v := k.newSession(now.Add(time.Hour))
	got, ok := k.parseSession(v, now)
	if !ok || got.id != sess.id || got.csrf != sess.csrf || got.csrf == "" {
		t.Fatalf("round trip: %+v %v, want %+v", got, ok, sess)
	}
	if _, ok := k.parseSession(v, now.Add(time.Hour)); ok {
		t.Error("an expired session was accepted")
	}
	if _, ok := deriveKeys("another-token-0123456789abcdef").parseSession(v, now); ok {
		t.Error("a session of the old token was accepted after the token changed")
	}
	b, _ := base64.RawURLEncoding.DecodeString(v)
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 1
		if _, ok := k.parseSession(base64.RawURLEncoding.EncodeToString(c), now); ok {
			t.Fatalf("a cookie with byte %d changed was accepted", i)
		}
	}
	for _, bad := range []string{"", "x", v + "A", v[:len(v)-2], "!!!!"} {
		if _, ok := k.parseSession(bad, now); ok {
			t.Errorf("cookie %q accepted", bad)
		}
	}
	// Every session gets its own CSRF token, and a sign-in form's token is
	// not a session's.
	other, _ := k.newSession(now.Add(time.Hour))
	if other.csrf == sess.csrf || k.csrfFor("login", sess.id[:]) == sess.csrf {
		t.Error("CSRF tokens are shared")
	}
}

func TestTokenValid(t *testing.T) {
	k := deriveKeys("session-test-token-0123456789")
	if !k.tokenValid("session-test-token-0123456789") {
		t.Error("the token was refused")
	}
	for _, bad := range []string{"", "session-test-token-012345678", "session-test-token-01234567890", "SESSION-TEST-TOKEN-0123456789"} {
		if k.tokenValid(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestTTLText(t *testing.T) {
	for d, want := range map[time.Duration]string{12 * time.Hour: "12 h", 90 * time.Minute: "90 min", 30 * time.Second: "30 s"} {
		if got := ttlText(d); got != want {
			t.Errorf("ttlText(%v) = %q, want %q", d, got, want)
		}
	}
}
