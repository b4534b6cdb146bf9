package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/restarea/restarea/internal/testkit"
)

// Guessing the admin token: 5 wrong tries, then one a second, per source;
// 429 with Retry-After meanwhile, and the right token is not compared
// either (a throttled guess learns nothing). Other sources are unaffected,
// and an operator's valid calls never throttle them.
func TestAdminAuthThrottled(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := New(Config{Service: testkit.NewFakeService(), Admin: testkit.NewFakeService(), AdminToken: token, Logger: discard, Registerer: reg})
	send := func(remote, tok string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/api/v1/admin/settings", nil)
		r.RemoteAddr = remote
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	const attacker = "198.51.100.7:5000"
	for i := range DefaultAuthBurst {
		if w := send(attacker, fmt.Sprintf("guess-%d", i)); w.Code != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d, want 401", i, w.Code)
		}
	}
	w := send(attacker, "guess-more")
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("guess past the burst: %d, want 429", w.Code)
	}
	if s, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || s < 1 || s > 1 {
		t.Fatalf("Retry-After %q, want 1", w.Header().Get("Retry-After"))
	}
	if w := send(attacker, token); w.Code != http.StatusTooManyRequests {
		t.Fatalf("right token while throttled: %d, want 429", w.Code)
	}
	// The same /64 is the same source; another address is not.
	if w := send("[2001:db8::1]:1", "x"); w.Code != http.StatusUnauthorized {
		t.Fatalf("other source: %d", w.Code)
	}
	for i := range DefaultAuthBurst * 2 {
		if w := send(fmt.Sprintf("[2001:db8::%x]:1", i+2), "x"); i >= DefaultAuthBurst-1 && w.Code != http.StatusTooManyRequests {
			t.Fatalf("address %d of one /64: %d, want 429", i+2, w.Code)
		}
	}
	const operator = "192.0.2.10:1"
	for i := range DefaultAuthBurst * 3 {
		if w := send(operator, token); w.Code != http.StatusOK {
			t.Fatalf("operator call %d: %d", i, w.Code)
		}
	}
	for name, least := range map[string]float64{"restarea_admin_auth_throttled_total": 1, "restarea_admin_auth_failures_total": DefaultAuthBurst} {
		if got := counterValue(t, reg, name); got < least {
			t.Errorf("%s = %v, want at least %v", name, got, least)
		}
	}
}

func TestAuthThrottleRefillsAndIsBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	th := newAuthThrottle(5, time.Second, clock)
	for i := range 5 {
		if w := th.Take("a"); w != 0 {
			t.Fatalf("take %d: wait %v", i, w)
		}
	}
	if w := th.Take("a"); w != time.Second {
		t.Fatalf("wait %v, want 1s", w)
	}
	advance(400 * time.Millisecond)
	if w := th.Take("a"); w != 600*time.Millisecond {
		t.Fatalf("wait %v, want 600ms", w)
	}
	advance(600 * time.Millisecond)
	if w := th.Take("a"); w != 0 {
		t.Fatalf("after a second: wait %v", w)
	}
	if w := th.Take("a"); w == 0 {
		t.Fatal("one attempt a second, not two")
	}

	// Memory is bounded: past maxAuthSources, sources that have refilled
	// are forgotten, and if none has, newcomers share one bucket.
	for i := range maxAuthSources + 100 {
		th.Take(strconv.Itoa(i))
		th.Take(strconv.Itoa(i))
	}
	if n := th.size(); n > maxAuthSources+1 {
		t.Fatalf("%d sources remembered, bound %d", n, maxAuthSources)
	}
	advance(10 * time.Second)
	th.Take("late")
	if n := th.size(); n > 10 {
		t.Fatalf("%d sources remembered after every bucket refilled", n)
	}
}

// counterValue reads the value of an unlabelled counter from reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// A throttled source cannot tell the right token from a wrong one: both
// get the same answer, byte for byte. This is why the right token is not
// let through a throttled address (docs/public-port.md, "The admin token
// behind a shared address"): any answer that depended on the token would
// be an oracle the throttle no longer bounds, guesses at the network's
// rate instead of one a second.
func TestThrottledAnswerRevealsNothing(t *testing.T) {
	now := time.Unix(1000, 0)
	throttle := newAuthThrottle(0, 0, func() time.Time { return now })
	h := New(Config{Service: testkit.NewFakeService(), Admin: testkit.NewFakeService(), AdminToken: token, Logger: discard, AuthThrottle: throttle})
	send := func(tok string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/api/v1/admin/settings", nil)
		r.RemoteAddr = "198.51.100.7:5000"
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for i := range DefaultAuthBurst {
		send(fmt.Sprintf("guess-%d", i))
	}
	right, wrong := send(token), send("guess-more")
	if right.Code != http.StatusTooManyRequests || right.Code != wrong.Code ||
		right.Header().Get("Retry-After") != wrong.Header().Get("Retry-After") || right.Body.String() != wrong.Body.String() {
		t.Fatalf("throttled answers differ: right token %d %q %s, wrong %d %q %s",
			right.Code, right.Header().Get("Retry-After"), right.Body, wrong.Code, wrong.Header().Get("Retry-After"), wrong.Body)
	}
	// The lock-out lasts as long as the guessing: a second after it
	// stops, the right token is served again.
	now = now.Add(DefaultAuthEvery)
	if w := send(token); w.Code != http.StatusOK {
		t.Fatalf("right token once the source has an attempt again: %d", w.Code)
	}
}
