package bench

import "sync/atomic"

// countAtomic is a counter shared by load clients.
type countAtomic struct{ n atomic.Int64 }

func (c *countAtomic) add()      { c.n.Add(1) }
func (c *countAtomic) load() int { return int(c.n.Load()) }
