package bench

import (
	"context"
	"time"
)

// mixedRounds measures new posts at 16 and at 64 clients and the replay
// storm (64 clients) in alternating rounds, sz.rounds of each sharing one
// phase's time. Their ratios are targets, and this machine's load drifts
// within seconds: run one after the other, a phase that met a busy moment
// moved a ratio by half. Alternating charges the drift to all three
// alike.
//
// Each round of each load starts with sz.warm of the same load that is
// not measured. A node's work outlives the request that caused it — the
// search index takes what was applied in batches up to a second apart
// (search.DefaultPace), merges segments later, and the state file commits
// every 50 ms — so without the lead-in a round would pay for the rounds
// before it: replays, which are never indexed, for the index batches of
// the 64-client round of new posts just before them. With it every
// measured window holds its own load's background work at its steady
// rate, and the lead-in is longer than the index's pace. The CPU of the
// node processes is counted over the measured windows of the 64-client
// rounds of new posts and of the replay rounds.
func mixedRounds(ctx context.Context, cl *Client, t *Target, sz sizes, logf func(string, ...any)) (PostFigure, PostFigure, *replaySet, error) {
	rounds := max(sz.rounds, 1)
	logf("replay storm: %d request_ids", sz.replayIDs)
	st, err := storeOriginals(ctx, cl, t, sz.replayIDs, 64, sz.bodyBytes, logf)
	if err != nil {
		return PostFigure{}, PostFigure{}, st, err
	}
	d := sz.phase / time.Duration(rounds)
	logf("new posts over http at 16 and at 64 clients, and replays at 64, in %d alternating rounds of %s, each after %s of the same load unmeasured", rounds, d, sz.warm)
	// unmeasured holds the lead-ins' new posts: they are stored too, so
	// the storm's final count must include them.
	var s16, s64, sr, unmeasured sample
	var cpu, replayCPU time.Duration
	cpuOK := true
	posts := func(l Load) sample { return newPostsSample(ctx, cl, t.URLs, "http", l, sz.bodyBytes) }
	replays := func(l Load) sample { return st.replay(ctx, cl, l) }
	// round runs clients of run for sz.warm, adding that sample to lead
	// when it is set, then for d, the measured window, whose node CPU it
	// adds to cpuInto when that is set.
	round := func(run func(Load) sample, clients int, lead *sample, cpuInto *time.Duration) sample {
		if sz.warm > 0 {
			w := run(Load{Clients: clients, Duration: sz.warm, MaxOps: sz.maxOps})
			if lead != nil {
				lead.add(w)
			}
		}
		before, ok1 := cpuOf(t.Pids)
		s := run(Load{Clients: clients, Duration: d, MaxOps: sz.maxOps})
		after, ok2 := cpuOf(t.Pids)
		if cpuInto != nil {
			if ok1 && ok2 {
				*cpuInto += after - before
			} else {
				cpuOK = false
			}
		}
		return s
	}
	for r := 0; r < rounds; r++ {
		s16.add(round(posts, 16, &unmeasured, nil))
		s64.add(round(posts, 64, &unmeasured, &cpu))
		sr.add(round(replays, 64, nil, &replayCPU))
	}
	p16 := PostFigure{Channel: "http", Clients: 16, Stats: s16.stats()}
	p64 := PostFigure{Channel: "http", Clients: 64, Stats: s64.stats()}
	if cpuOK && p64.Ops > 0 {
		p64.CPUMsPerPost = ms(cpu) / float64(p64.Ops)
	}
	for _, p := range []PostFigure{p16, p64} {
		logf("  %d clients: %.0f posts/s, p50 %.1f ms, p99 %.1f ms, %d errors", p.Clients, p.PerSecond, p.P50Ms, p.P99Ms, p.Errors)
	}
	logf("  %.3f ms CPU per post at 64 clients (nodes)", p64.CPUMsPerPost)
	newPosts := s16
	newPosts.add(s64)
	newPosts.add(unmeasured)
	err = st.finish(ctx, cl, sr, newPosts)
	rf := &st.fig
	if cpuOK && rf.Ops > 0 {
		rf.CPUMsPerReplay = ms(replayCPU) / float64(rf.Ops)
	}
	if err == nil {
		logf("  %.0f replays/s, p99 %.1f ms, %.3f ms CPU per replay (nodes); stored %d → %d with %d new posts alongside (exact: %v)", rf.PerSecond, rf.P99Ms, rf.CPUMsPerReplay, rf.StoredBefore, rf.StoredAfter, rf.NewPosts, rf.Exact)
	}
	return p16, p64, st, err
}
