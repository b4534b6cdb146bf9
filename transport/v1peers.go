package transport

import (
	"sync"
	"time"
)

// v1MemoryFor is how long a dialer, having found that a peer speaks only
// protocol version 1 (it closed at the version-2 greeting and took a
// version-1 one), greets it with version 1 straight away. Afterwards it
// offers version 2 again, so a peer upgraded meanwhile is spoken to in
// version 2 within this long; an old peer costs one refused probe per
// period.
const v1MemoryFor = 2 * time.Minute

// v1MemoryMax bounds the peers remembered at once. A cluster has a handful
// of members; the bound only keeps a flood of dial addresses (raft dials
// whatever address its configuration holds) from growing the map.
const v1MemoryMax = 1024

// v1Peers remembers, per dialed address, until when the peer is to be
// greeted with version 1. Safe for concurrent use.
type v1Peers struct {
	now func() time.Time

	mu    sync.Mutex
	until map[string]time.Time
}

func newV1Peers(now func() time.Time) *v1Peers {
	return &v1Peers{now: now, until: make(map[string]time.Time)}
}

// speaksV1Only reports whether addr was found to speak only version 1 less
// than v1MemoryFor ago.
func (p *v1Peers) speaksV1Only(addr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.until[addr]
	if !ok {
		return false
	}
	if !p.now().Before(t) {
		delete(p.until, addr)
		return false
	}
	return true
}

// remember records that addr speaks only version 1. When full, it forgets
// expired entries and, if none were, the one closest to expiry.
func (p *v1Peers) remember(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if _, ok := p.until[addr]; !ok && len(p.until) >= v1MemoryMax {
		var oldest string
		var oldestT time.Time
		for a, t := range p.until {
			if !now.Before(t) {
				delete(p.until, a)
				continue
			}
			if oldest == "" || t.Before(oldestT) {
				oldest, oldestT = a, t
			}
		}
		if len(p.until) >= v1MemoryMax {
			delete(p.until, oldest)
		}
	}
	p.until[addr] = now.Add(v1MemoryFor)
}

// size is the number of addresses remembered (tests).
func (p *v1Peers) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.until)
}
