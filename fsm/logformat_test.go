package fsm_test

import (
	"testing"

	"github.com/restarea/restarea/fsm"
)

// TestEnableLogV2: the switch is replicated state, kept across a restart,
// and an unknown op before it changes nothing.
func TestEnableLogV2(t *testing.T) {
	h := newHarness(t)
	if h.f.LogFormat() != 1 {
		t.Fatalf("LogFormat = %d on a new state, want 1", h.f.LogFormat())
	}
	if r := h.apply(fsm.Command{Op: fsm.OpEnableLogV2}); r.Err != nil {
		t.Fatalf("enable: %v", r.Err.Message)
	}
	if h.f.LogFormat() != 2 {
		t.Fatalf("LogFormat = %d after the switch, want 2", h.f.LogFormat())
	}
	h.f.Close()
	h.f = openFSM(t, h.path)
	if h.f.LogFormat() != 2 {
		t.Fatalf("LogFormat = %d after a restart, want 2", h.f.LogFormat())
	}
}
