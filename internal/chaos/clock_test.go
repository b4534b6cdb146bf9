package chaos

import (
	"slices"
	"testing"
)

// A driver with the clock class gets clock faults in its schedule; the
// leader's hits the leader, the follower's a follower.
func TestClockFaultsScheduled(t *testing.T) {
	kinds := map[string]bool{}
	for _, e := range Schedule(1, 60e9, []string{ClassKill, ClassPause, ClassPartition, ClassClock}, 3) {
		kinds[e.Kind] = true
		switch e.Kind {
		case ClockLeader:
			if got := e.targets(3, 1); !slices.Equal(got, []int{1}) {
				t.Errorf("clock-leader hits %v, want the leader [1]", got)
			}
		case ClockFollower:
			if got := e.targets(3, 1); len(got) != 1 || got[0] == 1 {
				t.Errorf("clock-follower hits %v, want one follower", got)
			}
		}
	}
	if !kinds[ClockLeader] || !kinds[ClockFollower] {
		t.Fatalf("seed 1 (the CI run) schedules no clock fault of each kind: %v", kinds)
	}
	for _, e := range Schedule(1, 60e9, []string{ClassKill, ClassPause, ClassPartition}, 3) {
		if isClockFault(e.Kind) {
			t.Fatalf("clock fault %q without the clock class", e.Kind)
		}
	}
}
