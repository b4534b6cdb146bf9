package chaos

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// report completes the upgrade's report from the history: each step's
// write gap, the acknowledged posts of the last round; and returns the
// violations: the upgrade's error, no write after it, a node not ready at
// the end.
func (up *upgrader) report(ctx context.Context, ops []Op) (*UpgradeReport, []Violation) {
	up.mu.Lock()
	rep := up.rep
	rep.Steps = append([]UpgradeStep(nil), up.rep.Steps...)
	err := up.err
	up.mu.Unlock()
	rep.EarlierReplays = up.w.earlierReplays.Load()
	for k := range rep.Steps {
		s := &rep.Steps[k]
		s.WriteGapMs = float64(gapWithin(ops, s.StartNs, s.EndNs+int64(up.pace.gap)).Microseconds()) / 1000
	}
	var vs []Violation
	if err != nil {
		vs = append(vs, violation(VUpgradeFailed, "", -1, "%v", err))
	}
	if rep.FinalRoundNs > 0 {
		for _, op := range ops {
			if op.Kind == OpPost && op.CallNs >= rep.FinalRoundNs && (op.Outcome == OutcomeCreated || op.Outcome == OutcomeReplayed) {
				rep.FinalRoundAcknowledged++
			}
		}
		if rep.FinalRoundAcknowledged == 0 {
			vs = append(vs, violation(VUpgradeFailed, "", -1, "no post was acknowledged in the last round, after the upgrade"))
		}
	}
	for i, u := range up.urls {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := waitReady(rctx, up.hc, u); err != nil {
			vs = append(vs, violation(VUpgradeFailed, "", i, "not ready after the upgrade: %v", err))
		}
		cancel()
	}
	rep.Completed = err == nil
	return &rep, vs
}

// gapWithin is the longest time between from and to in which no post
// succeeded, as writeGap measures it over the whole run.
func gapWithin(ops []Op, from, to int64) time.Duration {
	if to <= from {
		return 0
	}
	prev := from
	var gap time.Duration
	var ok []int64
	for _, op := range ops {
		if op.Kind == OpPost && (op.Outcome == OutcomeCreated || op.Outcome == OutcomeReplayed) && op.ReturnNs > from && op.ReturnNs < to {
			ok = append(ok, op.ReturnNs)
		}
	}
	slices.Sort(ok)
	for _, t := range append(ok, to) {
		gap = max(gap, time.Duration(t-prev))
		prev = t
	}
	return gap
}

// print writes the upgrade's lines of the report's table.
func (u *UpgradeReport) print(tw *tabwriter.Writer) {
	fmt.Fprintf(tw, "upgrade\tfrom %s to %s, completed %v\n", u.FromVersion, u.ToVersion, u.Completed)
	shown := func(vs []string) string {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = cmp.Or(v, "-")
		}
		return cmp.Or(strings.Join(out, ","), "-")
	}
	for _, s := range u.Steps {
		what := fmt.Sprintf("node %d (%s) → %s", s.Node, s.Role, s.Version)
		if s.Step == StepFinalize {
			what = fmt.Sprintf("cluster_version %s → %s", shown(u.ClusterVersionBefore), shown(u.ClusterVersionAfter))
		}
		line := fmt.Sprintf("  %s\t%s: %.0fms, write gap %.0fms", s.Step, what, s.ReadyMs, s.WriteGapMs)
		if s.Error != "" {
			line += ", error: " + s.Error
		}
		fmt.Fprintln(tw, line)
	}
	fmt.Fprintf(tw, "  last round\t%d posts acknowledged, %d replays of earlier request_ids\n", u.FinalRoundAcknowledged, u.EarlierReplays)
}
