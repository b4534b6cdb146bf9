package node

import (
	"testing"
	"time"

	"github.com/restarea/restarea/cluster"
)

// fakeTime is a wall and a monotonic clock a test moves apart.
type fakeTime struct {
	wall time.Time
	mono time.Duration
}

func (f *fakeTime) Now() time.Time       { return f.wall }
func (f *fakeTime) Mono() time.Duration  { return f.mono }
func (f *fakeTime) pass(d time.Duration) { f.wall, f.mono = f.wall.Add(d), f.mono+d }
func (f *fakeTime) step(d time.Duration) { f.wall = f.wall.Add(d) }
func newFakeGuard(f *fakeTime, clock int64) *clockGuard {
	return newClockGuard(f.Now, f.Mono, 10*time.Second, clock)
}

// The guard measures the cluster time from the replicated clock and the
// monotonic clock; it is fresh only after an entry seen while caught up
// before and after (the last entry of a catch-up may be old).
func TestClockGuardMeasure(t *testing.T) {
	f := &fakeTime{wall: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)}
	onDisk := f.wall.Add(-30 * 24 * time.Hour).UnixNano() // a month-old clock on disk
	g := newFakeGuard(f, onDisk)
	if _, fresh := g.cluster(); fresh {
		t.Fatal("fresh before any observation")
	}
	// A catch-up: entries applied while behind, then the last one (a
	// minute old) while caught up: anchored, not fresh.
	g.observe(onDisk+int64(time.Hour), false)
	g.observe(f.wall.Add(-time.Minute).UnixNano(), true)
	if _, fresh := g.cluster(); fresh {
		t.Fatal("fresh after a catch-up's last entry")
	}
	// New entries while caught up before and after: fresh at the second
	// (the first may still be the end of a catch-up), and measured.
	f.pass(time.Second)
	g.observe(f.wall.UnixNano(), true)
	if _, fresh := g.cluster(); fresh {
		t.Fatal("fresh after one entry")
	}
	f.pass(time.Second)
	g.observe(f.wall.UnixNano(), true)
	c, fresh := g.cluster()
	if !fresh || c != f.wall.UnixNano() {
		t.Fatalf("after a new entry: fresh %v, cluster %v, want %v", fresh, time.Unix(0, c).UTC(), f.wall)
	}
	// Time passes with no entry: the measure follows the monotonic clock.
	f.pass(time.Hour)
	if skew, _ := g.skew(); skew != 0 {
		t.Fatalf("skew after an hour without entries: %v", skew)
	}
	// The wall clock steps a year ahead: the measure does not follow.
	f.step(365 * 24 * time.Hour)
	if skew, known := g.skew(); !known || skew != 365*24*time.Hour {
		t.Fatalf("skew after a step: %v (known %v)", skew, known)
	}
	// An older replicated clock (a slower leader's) never lowers it.
	before, _ := g.cluster()
	g.observe(before-int64(time.Minute), true)
	if after, _ := g.cluster(); after != before {
		t.Fatalf("measure went back: %v → %v", before, after)
	}
}

// A voter agrees with a time by its measure when it has one, else by its
// wall clock, within the tolerance either way.
func TestClockGuardAgrees(t *testing.T) {
	f := &fakeTime{wall: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)}
	g := newFakeGuard(f, 0)
	now := f.wall.UnixNano()
	year := int64(365 * 24 * time.Hour)
	cases := []struct {
		name string
		r    *cluster.ClockReport
		t    int64
		want bool
	}{
		{"no answer", nil, now, false},
		{"fresh, same time", &cluster.ClockReport{Wall: now + year, Cluster: now, Fresh: true}, now, true},
		{"fresh measure refuses a stepped time though its wall agrees", &cluster.ClockReport{Wall: now + year, Cluster: now, Fresh: true}, now + year, false},
		{"not fresh, by wall", &cluster.ClockReport{Wall: now + int64(5*time.Second), Cluster: 0}, now, true},
		{"not fresh, wall too far", &cluster.ClockReport{Wall: now + int64(11*time.Second)}, now, false},
		{"behind within tolerance", &cluster.ClockReport{Cluster: now - int64(9*time.Second), Fresh: true}, now, true},
	}
	for _, c := range cases {
		if got := g.agrees(c.r, c.t); got != c.want {
			t.Errorf("%s: agrees = %v, want %v", c.name, got, c.want)
		}
	}
}
