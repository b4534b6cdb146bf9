package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ClassClock is the fault class of a driver that can step a node's wall
// clock (a ClockDriver): what a bad NTP step or a VM restored with a
// wrong clock does. The node's monotonic clock is left alone, as a real
// step leaves it.
const ClassClock = "clock"

// Clock fault kinds: the leader's (or a follower's) wall clock runs
// ClockStep ahead while the fault holds, then is set back. A cluster that
// let the leader stamp that clock would expire every entry older than its
// retention from a year ahead, which the checker sees as lost writes; a
// follower stepped ahead may win a later election with its clock.
const (
	ClockLeader   = "clock-leader"
	ClockFollower = "clock-follower"
)

// ClockStep is how far a clock fault steps a node's wall clock.
const ClockStep = 365 * 24 * time.Hour

// ClockDriver is a FaultDriver that can step a node's wall clock.
type ClockDriver interface {
	// SetClockOffset makes node i's wall clock run d ahead of real time
	// (0: real time again).
	SetClockOffset(ctx context.Context, i int, d time.Duration) error
}

// clockKinds returns the clock fault kinds for classes and n nodes.
func clockKinds(classes []string, n int) []string {
	if !slices.Contains(classes, ClassClock) {
		return nil
	}
	if n > 1 {
		return []string{ClockLeader, ClockFollower}
	}
	return []string{ClockLeader}
}

func isClockFault(kind string) bool { return strings.HasPrefix(kind, "clock-") }

// stepClocks sets the wall clock offset of nodes to d.
func (r *faultRunner) stepClocks(ctx context.Context, nodes []int, d time.Duration) error {
	cd, ok := r.d.(ClockDriver)
	if !ok {
		return fmt.Errorf("the fault driver cannot step clocks")
	}
	var err error
	for _, i := range nodes {
		err = errors.Join(err, cd.SetClockOffset(ctx, i, d))
	}
	return err
}

// SetClockOffset implements ClockDriver through the node's test clock
// offset file (the nodes run with --allow-test-clock).
func (l *Local) SetClockOffset(_ context.Context, i int, d time.Duration) error {
	return l.c.SetClockOffset(i, d)
}
