package transport

import (
	"container/heap"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultReplayCapacity is how many nonces a ReplayGuard remembers when
// given zero: about 9 MiB at most, and room for some 1,000 signed requests a
// second over a whole 60 s validity window before it has to narrow it.
const DefaultReplayCapacity = 1 << 16

// ErrReplayed is returned by ReplayGuard.Use for a nonce it has seen.
var ErrReplayed = errors.New("transport: signed request replayed (its nonce was already used)")

// ReplayGuard refuses a second use of a signed request's nonce while the
// request could still pass CheckHeaders. It remembers each nonce until its
// timestamp leaves the validity window (maxSkew either side), in a bounded
// set: when the set is full it forgets the oldest nonce and from then on
// refuses requests signed at or before that one's time, since it could no
// longer tell a replay of them. Honest requests are signed just before they
// are sent, so only a load beyond Capacity nonces per window's worth of
// delay ever sees that refusal. Safe for concurrent use.
type ReplayGuard struct {
	mu       sync.Mutex
	maxSkew  time.Duration
	capacity int
	seen     map[string]struct{}
	byTime   nonceHeap
	floor    time.Time // signed at or before: refused
	now      func() time.Time
}

// NewReplayGuard returns a guard for requests checked with maxSkew (zero:
// DefaultMaxSkew) remembering at most capacity nonces (zero:
// DefaultReplayCapacity).
func NewReplayGuard(capacity int, maxSkew time.Duration) *ReplayGuard {
	if capacity <= 0 {
		capacity = DefaultReplayCapacity
	}
	if maxSkew <= 0 {
		maxSkew = DefaultMaxSkew
	}
	return &ReplayGuard{maxSkew: maxSkew, capacity: capacity, seen: make(map[string]struct{}), now: time.Now}
}

// Use records the nonce of a request whose signature was verified. It
// returns ErrReplayed if the nonce was used before, and an error wrapping
// ErrUnauthenticated if the request has left the validity window since its
// headers were checked (a slow body) or was signed too long ago for the
// guard to remember. Call it only after Verify: unverified nonces would let
// anyone fill the set.
func (g *ReplayGuard) Use(s Signed) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if now.Sub(s.Time) > g.maxSkew {
		return fmt.Errorf("%w: timestamp left the %v window while the request was read", ErrUnauthenticated, g.maxSkew)
	}
	for len(g.byTime) > 0 && now.Sub(g.byTime[0].at) > g.maxSkew {
		delete(g.seen, heap.Pop(&g.byTime).(nonceAt).nonce)
	}
	if _, ok := g.seen[s.Nonce]; ok {
		return ErrReplayed
	}
	if !s.Time.After(g.floor) {
		return fmt.Errorf("%w: signed too long ago to be checked for replay under this load; sign it again", ErrUnauthenticated)
	}
	for len(g.byTime) >= g.capacity {
		old := heap.Pop(&g.byTime).(nonceAt)
		delete(g.seen, old.nonce)
		if old.at.After(g.floor) {
			g.floor = old.at
		}
	}
	if !s.Time.After(g.floor) {
		return fmt.Errorf("%w: signed too long ago to be checked for replay under this load; sign it again", ErrUnauthenticated)
	}
	g.seen[s.Nonce] = struct{}{}
	heap.Push(&g.byTime, nonceAt{at: s.Time, nonce: s.Nonce})
	return nil
}

// Len returns the number of nonces remembered.
func (g *ReplayGuard) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.seen)
}

type nonceAt struct {
	at    time.Time
	nonce string
}

// nonceHeap is a min-heap by signing time.
type nonceHeap []nonceAt

func (h nonceHeap) Len() int           { return len(h) }
func (h nonceHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h nonceHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *nonceHeap) Push(x any)        { *h = append(*h, x.(nonceAt)) }
func (h *nonceHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nonceAt{}
	*h = old[:len(old)-1]
	return x
}
