package node

import "testing"

func TestSnapshotThresholdFollowsTheStore(t *testing.T) {
	for _, tc := range []struct{ configured, entries, want uint64 }{
		{8192, 0, 8192},
		{8192, 10_000, 8192},
		{8192, 1_000_000, 250_000},
		{500_000, 1_000_000, 500_000},
	} {
		if got := snapshotThreshold(tc.configured, tc.entries); got != tc.want {
			t.Errorf("snapshotThreshold(%d, %d) = %d, want %d", tc.configured, tc.entries, got, tc.want)
		}
	}
}
