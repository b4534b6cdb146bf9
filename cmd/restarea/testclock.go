package main

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// offsetClock is a wall clock that runs ahead of (or behind) the real one
// by the duration written in a file, for chaos tests of clock faults
// (`restarea chaos` steps a node's clock a year ahead and back). It is
// only used with --test-clock-offset-file, which `restarea serve` refuses
// without --allow-test-clock. The monotonic clock, by which a node
// measures elapsed time, is left alone, as a real clock step leaves it.
type offsetClock struct {
	path string

	mu     sync.Mutex
	off    time.Duration
	readAt time.Time
}

// offsetReread bounds how stale the offset may be.
const offsetReread = 100 * time.Millisecond

func newOffsetClock(path string) (*offsetClock, error) {
	c := &offsetClock{path: path}
	if _, err := c.read(); err != nil {
		return nil, err
	}
	return c, nil
}

// read returns the offset in the file: a Go duration such as 8760h or
// -5s; a missing or empty file is no offset.
func (c *offsetClock) read() (time.Duration, error) {
	b, err := os.ReadFile(c.path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("--test-clock-offset-file %s: %q is not a duration such as 8760h", c.path, s)
	}
	return d, nil
}

// Now is the real time plus the offset last read (an unreadable file
// keeps the previous offset).
func (c *offsetClock) Now() time.Time {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Sub(c.readAt) >= offsetReread {
		if d, err := c.read(); err == nil {
			c.off = d
		}
		c.readAt = now
	}
	return now.Add(c.off)
}
