package transport

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// CheckHeaders decides on the headers alone, so a handler can refuse an
// unsigned or stale request before reading its body.
func TestCheckHeadersNeedsNoBody(t *testing.T) {
	r := signed(t, http.MethodPost, "/internal/v1/apply", []byte("body"))
	s, err := CheckHeaders(r, 0)
	if err != nil {
		t.Fatalf("CheckHeaders: %v", err)
	}
	if len(s.Nonce) != nonceLen || time.Since(s.Time) > time.Second {
		t.Fatalf("Signed = %+v", s)
	}
	if err := s.Verify(secret, r, []byte("body")); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	unsigned, _ := http.NewRequest(http.MethodPost, "http://x/internal/v1/apply", nil)
	if _, err := CheckHeaders(unsigned, 0); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("unsigned: %v", err)
	}
	// Two signatures of the same request never share a nonce.
	if a, b := signed(t, "POST", "/p", nil), signed(t, "POST", "/p", nil); a.Header.Get(HeaderNonce) == b.Header.Get(HeaderNonce) {
		t.Fatal("two signatures with the same nonce")
	}
}

func TestReplayGuardRefusesSecondUse(t *testing.T) {
	g := NewReplayGuard(0, 0)
	r := signed(t, http.MethodPost, "/internal/v1/apply-batch", []byte("b"))
	s, err := CheckHeaders(r, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Use(s); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := g.Use(s); !errors.Is(err, ErrReplayed) {
		t.Fatalf("second use: %v, want ErrReplayed", err)
	}
	other, _ := CheckHeaders(signed(t, http.MethodPost, "/internal/v1/apply-batch", []byte("b")), 0)
	if err := g.Use(other); err != nil {
		t.Fatalf("a new signature of the same request: %v", err)
	}
}

// The guard forgets a nonce once its request is stale anyway, and a
// request that went stale while its body was read is refused.
func TestReplayGuardExpiry(t *testing.T) {
	now := time.Now()
	g := NewReplayGuard(0, 30*time.Second)
	g.now = func() time.Time { return now }
	for i := range 10 {
		if err := g.Use(Signed{Time: now, Nonce: fmt.Sprintf("%032x", i)}); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(31 * time.Second)
	if err := g.Use(Signed{Time: now, Nonce: fmt.Sprintf("%032x", 100)}); err != nil {
		t.Fatal(err)
	}
	if g.Len() != 1 {
		t.Fatalf("remembered %d nonces after the window, want 1", g.Len())
	}
	if err := g.Use(Signed{Time: now.Add(-31 * time.Second), Nonce: fmt.Sprintf("%032x", 0)}); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("stale request: %v", err)
	}
}

// Full, the guard forgets the oldest nonce and from then on refuses what
// was signed before it, so no replay slips through; fresh requests pass.
func TestReplayGuardBounded(t *testing.T) {
	now := time.Now()
	g := NewReplayGuard(100, 30*time.Second)
	g.now = func() time.Time { return now }
	first := Signed{Time: now.Add(-10 * time.Second), Nonce: fmt.Sprintf("%032x", 0)}
	if err := g.Use(first); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 1000; i++ {
		if err := g.Use(Signed{Time: now.Add(time.Duration(i) * time.Millisecond), Nonce: fmt.Sprintf("%032x", i)}); err != nil {
			t.Fatalf("fresh request %d: %v", i, err)
		}
	}
	if g.Len() > 100 {
		t.Fatalf("remembered %d nonces, capacity 100", g.Len())
	}
	if err := g.Use(first); err == nil {
		t.Fatal("a replay of a forgotten nonce was accepted")
	}
	if err := g.Use(Signed{Time: now.Add(-5 * time.Second), Nonce: fmt.Sprintf("%032x", 5000)}); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("request older than the forgotten ones: %v", err)
	}
}
