package chaos

import (
	"testing"
)

// A driver with the power-cut class gets power cuts of one node, of a
// majority and of all nodes in its schedule, hitting that many distinct
// nodes; without the class it gets none.
func TestPowerCutsScheduled(t *testing.T) {
	want := map[string]int{PowerCutOne: 1, PowerCutMajority: 2, PowerCutAll: 3}
	seen := map[string]bool{}
	for _, e := range Schedule(1, 120e9, []string{ClassKill, ClassPowerCut}, 3) {
		n, ok := want[e.Kind]
		if !ok {
			continue
		}
		seen[e.Kind] = true
		got := e.targets(3, 0)
		distinct := map[int]bool{}
		for _, i := range got {
			distinct[i] = true
		}
		if len(got) != n || len(distinct) != n {
			t.Errorf("%s hits %v, want %d distinct nodes", e.Kind, got, n)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("seed 1 over 120 s schedules %v, want each power-cut kind", seen)
	}
	for _, e := range Schedule(1, 120e9, []string{ClassKill, ClassPause}, 3) {
		if isPowerCut(e.Kind) {
			t.Fatalf("power cut %q without the power-cut class", e.Kind)
		}
	}
}
