package search

import (
	"fmt"
	"runtime/debug"
)

// bleve can panic on a segment it closed itself while a batch still uses
// it (seen when its directory's disk filled: scorch's persister failed and
// a batch then hit "assignment to entry in nil map" in zapx's term
// dictionary cache). The index is only derived from the state, so such a
// panic must not take the node down: it is turned into an error and the
// index is rebuilt from the state, retried with backoff until it succeeds.

// safeStep is step, with a panic inside it turned into an error and a
// rebuild.
func (x *Index) safeStep() (caughtUp bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			x.reset.Store(true)
			x.log.Error("search: the index library panicked; the index is rebuilt from the state",
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			caughtUp, err = false, fmt.Errorf("search: index panicked: %v", p)
		}
	}()
	return x.step()
}

// closeQuietly closes an index that may be broken (after a panic), never
// panicking itself.
func closeQuietly(close func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("search: closing the index panicked: %v", p)
		}
	}()
	return close()
}
