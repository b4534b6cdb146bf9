package main

import (
	"os"
	"runtime/debug"
)

// tuneGC makes a node's garbage collector lazier than Go's default unless
// GOGC or GOMEMLIMIT say otherwise. A node's live heap is small (the state
// is in bbolt's file mapping), so at GOGC=100 collection runs very often
// under write load and costs several percent of the CPU every post needs;
// a soft limit keeps the heap bounded when the live set does grow.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(256 << 20)
	}
}
