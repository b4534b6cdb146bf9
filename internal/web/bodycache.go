package web

import (
	"crypto/sha256"
	"html/template"
	"sync"
)

// bodyCacheBytes bounds the rendered HTML kept in memory. Entries never
// change once posted, so a body's HTML is rendered once and kept until
// the bound pushes it out: a thread page of many replies, or one read
// often, does not render its bodies again. Rendering costs up to about
// 0.1 s for a hostile 20,000-character body (BenchmarkRenderBody), a
// few microseconds for ordinary text.
const bodyCacheBytes = 32 << 20

// bodyCache maps a body's hash to its HTML, evicting the oldest entries
// first once more than bodyCacheBytes of HTML are held.
var bodyCache = newHTMLCache(bodyCacheBytes)

type htmlCache struct {
	mu    sync.Mutex
	max   int
	size  int
	items map[[32]byte]template.HTML
	order [][32]byte // insertion order, oldest first
}

func newHTMLCache(max int) *htmlCache {
	return &htmlCache{max: max, items: make(map[[32]byte]template.HTML)}
}

// lookup returns the HTML of src if it is held.
func (c *htmlCache) lookup(src string) (template.HTML, bool) {
	key := sha256.Sum256([]byte(src))
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.items[key]
	return h, ok
}

// get returns the HTML of src, computing it with render on a miss. Two
// readers missing at once both render; the result is the same.
func (c *htmlCache) get(src string, render func(string) template.HTML) template.HTML {
	key := sha256.Sum256([]byte(src))
	c.mu.Lock()
	h, ok := c.items[key]
	c.mu.Unlock()
	if ok {
		return h
	}
	h = render(src)
	if len(h) > c.max {
		return h
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; ok {
		return h
	}
	c.items[key] = h
	c.order = append(c.order, key)
	c.size += len(h)
	for c.size > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.size -= len(c.items[old])
		delete(c.items, old)
	}
	return h
}
