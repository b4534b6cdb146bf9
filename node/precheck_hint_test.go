package node

import (
	"fmt"
	"testing"
)

// The hint of sources refused lately holds at most maxOverSources; a full
// one makes room by dropping the sources whose window has freed a slot,
// and otherwise leaves a newcomer out (which costs a proposal, never a
// wrong answer).
func TestOverLimitHintIsBounded(t *testing.T) {
	var p preCheck
	for i := range maxOverSources + 100 {
		p.noteRefused(fmt.Sprint("s", i), 10, 20)
	}
	if len(p.over) != maxOverSources {
		t.Fatalf("%d sources held, want the cap %d", len(p.over), maxOverSources)
	}
	if !p.overLimit("s0", 15) || p.overLimit("s0", 20) || p.overLimit(fmt.Sprint("s", maxOverSources), 15) {
		t.Fatal("overLimit: want s0 until 20, and the newcomer past the cap left out")
	}
	p.noteRefused("late", 25, 40) // every held source's slot is free at 25
	if len(p.over) != 1 || !p.overLimit("late", 30) {
		t.Fatalf("after the windows freed: %d sources held, want only the newcomer", len(p.over))
	}
}
