package api

import (
	"sync"
	"time"
)

// Defaults of the failed-authentication throttle.
const (
	// DefaultAuthBurst failed admin authentications a source may make at
	// once, after which it gets one per DefaultAuthEvery.
	DefaultAuthBurst = 5
	DefaultAuthEvery = time.Second
	// maxAuthSources bounds the sources the throttle remembers. Past it,
	// new sources share one bucket: a guesser spread over more addresses
	// than this is throttled as one, never let through.
	maxAuthSources = 16384
)

// AuthThrottle limits failed admin authentications per source with a
// token bucket: each attempt that carries a token takes one from its
// source's bucket (burst of them, one more every `every`), and a valid
// token gives it back. Taking before checking, rather than counting
// failures afterwards, holds concurrent guesses from one source to the
// same budget. At 1 guess a second a 16-byte random token is out of reach;
// a short one is refused at start (see node.Config.validate).
type AuthThrottle struct {
	burst float64
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// overflowSource is the shared bucket of sources beyond maxAuthSources.
const overflowSource = ""

// NewAuthThrottle returns a throttle allowing burst failed
// authentications per source, then one per every (0: the defaults). A
// node makes one and gives it to the admin API and the admin console, so
// that a guesser gets one budget whichever door it knocks on.
func NewAuthThrottle(burst int, every time.Duration) *AuthThrottle {
	return newAuthThrottle(burst, every, nil)
}

func newAuthThrottle(burst int, every time.Duration, now func() time.Time) *AuthThrottle {
	if burst <= 0 {
		burst = DefaultAuthBurst
	}
	if every <= 0 {
		every = DefaultAuthEvery
	}
	if now == nil {
		now = time.Now
	}
	return &AuthThrottle{burst: float64(burst), every: every, now: now, buckets: map[string]*bucket{}}
}

// Take spends one attempt of source. It returns 0 when the attempt may
// go ahead, or how long the source must wait for its next one.
func (t *AuthThrottle) Take(source string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	b := t.bucketOf(source, now)
	t.refill(b, now)
	if b.tokens < 1 {
		return time.Duration((1 - b.tokens) * float64(t.every))
	}
	b.tokens--
	return 0
}

// Refund gives back the attempt of a source whose token was valid, so
// that an operator's own calls never throttle it.
func (t *AuthThrottle) Refund(source string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.buckets[source]
	if !ok {
		b, ok = t.buckets[overflowSource]
	}
	if ok {
		b.tokens = min(t.burst, b.tokens+1)
	}
}

func (t *AuthThrottle) refill(b *bucket, now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(t.burst, b.tokens+float64(d)/float64(t.every))
	}
	b.at = now
}

// bucketOf returns source's bucket, making a full one if it has none. At
// the bound it first forgets every bucket that has refilled (those
// sources are back where a stranger starts), then falls back on the
// shared overflow bucket.
func (t *AuthThrottle) bucketOf(source string, now time.Time) *bucket {
	if b, ok := t.buckets[source]; ok {
		return b
	}
	if len(t.buckets) >= maxAuthSources {
		for k, b := range t.buckets {
			if t.refill(b, now); b.tokens >= t.burst {
				delete(t.buckets, k)
			}
		}
		if len(t.buckets) >= maxAuthSources {
			source = overflowSource
			if b, ok := t.buckets[source]; ok {
				return b
			}
		}
	}
	b := &bucket{tokens: t.burst, at: now}
	t.buckets[source] = b
	return b
}

// size is the number of sources remembered (tests).
func (t *AuthThrottle) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.buckets)
}
