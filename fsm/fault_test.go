package fsm_test

import (
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/restarea/restarea/fsm"
)

// The deliberate faults really break the rules they are meant to break,
// so a checker run against them must report violations.
func TestDeliberateFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault fsm.Fault
		want  uint64 // entries stored after a post and its replay
	}{
		{"correct", fsm.NoFault, 1},
		{"replays create", fsm.FaultReplaysCreate, 2},
		{"forget writes", fsm.FaultForgetWrites, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.f.Close()
			f, err := fsm.Open(filepath.Join(t.TempDir(), "state.db"), fsm.Options{Fault: tc.fault})
			if err != nil {
				t.Fatal(err)
			}
			h.f = f
			t.Cleanup(func() { f.Close() })
			req := question(t, "faulty")
			h.post(req, "192.0.2.1", uuid.NewString())
			h.post(req, "192.0.2.1", uuid.NewString())
			if got := h.count(); got != tc.want {
				t.Fatalf("%d entries stored, want %d", got, tc.want)
			}
		})
	}
}
