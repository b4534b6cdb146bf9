package chaos

import (
	"math/rand"
	"slices"
	"time"
)

// Fault kinds of a schedule. "leader" and "follower" are resolved when
// the fault fires, from the leader seen at that moment.
const (
	KillLeader        = "kill-leader"
	KillFollower      = "kill-follower"
	PauseLeader       = "pause-leader"
	PauseFollower     = "pause-follower"
	IsolateLeader     = "isolate-leader"
	IsolateFollower   = "isolate-follower"
	IsolateMinority   = "isolate-minority"
	maxScheduleFaults = 1000
)

// FaultEvent is one planned fault: it starts At after the run began,
// lasts Hold, and then is undone (restart, resume or heal). Pick chooses
// among the candidate nodes when it fires.
type FaultEvent struct {
	At   time.Duration `json:"at"`
	Kind string        `json:"kind"`
	Hold time.Duration `json:"hold"`
	Pick int           `json:"pick"`
}

// kindsFor returns the fault kinds a cluster of n nodes with a driver of
// the given classes can take, in a fixed order.
func kindsFor(classes []string, n int) []string {
	var kinds []string
	if slices.Contains(classes, ClassKill) {
		kinds = append(kinds, KillLeader)
		if n > 1 {
			kinds = append(kinds, KillFollower)
		}
	}
	if slices.Contains(classes, ClassPause) {
		kinds = append(kinds, PauseLeader)
		if n > 1 {
			kinds = append(kinds, PauseFollower)
		}
	}
	if slices.Contains(classes, ClassPartition) && n >= 3 {
		kinds = append(kinds, IsolateLeader, IsolateFollower)
		if n >= 5 {
			kinds = append(kinds, IsolateMinority)
		}
	}
	if slices.Contains(classes, ClassMembership) {
		kinds = append(kinds, membershipKinds(n)...)
	}
	kinds = append(kinds, powerKinds(classes, n)...)
	kinds = append(kinds, rotKinds(classes)...)
	return append(kinds, clockKinds(classes, n)...)
}

// Schedule plans the faults of a run: one at a time, each held for
// 30–60% of a cycle and followed by a quiet gap, from a warm-up of half a
// cycle until the run's end. The cycle is an eighth of the run, between
// 1s and 10s. The same seed, duration, classes and size give the same
// schedule.
func Schedule(seed int64, duration time.Duration, classes []string, n int) []FaultEvent {
	return ScheduleEvery(seed, duration, 0, classes, n)
}

// ScheduleEvery is Schedule with the cycle given (at least 1s; 0 takes
// Schedule's), for long runs that want more faults than one per 10s.
func ScheduleEvery(seed int64, duration, cycle time.Duration, classes []string, n int) []FaultEvent {
	kinds := kindsFor(classes, n)
	if len(kinds) == 0 {
		return nil
	}
	rng := rand.New(rand.NewSource(seed))
	if cycle <= 0 {
		cycle = min(max(duration/8, time.Second), 10*time.Second)
	}
	cycle = max(cycle, time.Second)
	var events []FaultEvent
	for at := cycle / 2; at+cycle <= duration && len(events) < maxScheduleFaults; at += cycle {
		hold := cycle * time.Duration(30+rng.Intn(31)) / 100
		events = append(events, FaultEvent{At: at, Kind: kinds[rng.Intn(len(kinds))], Hold: hold, Pick: rng.Intn(1 << 20)})
	}
	return events
}

// targets resolves the nodes a fault hits, given the leader index (-1
// when unknown: any node may be hit then).
func (e FaultEvent) targets(n, leader int) []int {
	if isPowerCut(e.Kind) {
		return powerTargets(e, n)
	}
	var followers []int
	for i := range n {
		if i != leader {
			followers = append(followers, i)
		}
	}
	if leader < 0 {
		leader = e.Pick % n
	}
	switch e.Kind {
	case KillLeader, PauseLeader, IsolateLeader, ClockLeader:
		return []int{leader}
	case IsolateMinority:
		// The leader and enough followers to stay a minority.
		size := (n - 1) / 2
		out := []int{leader}
		for k := 0; len(out) < size && k < len(followers); k++ {
			out = append(out, followers[(e.Pick+k)%len(followers)])
		}
		return out
	}
	if len(followers) == 0 {
		return []int{leader}
	}
	return []int{followers[e.Pick%len(followers)]}
}
