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
// alike. The CPU of the node processes is counted over the 64-client
// rounds of new posts.
func mixedRounds(ctx context.Context, cl *Client, t *Target, sz sizes, logf func(string, ...any)) (PostFigure, PostFigure, ReplayFigure, error) {
	rounds := max(sz.rounds, 1)
	logf("replay storm: %d request_ids", sz.replayIDs)
	st, err := storeOriginals(ctx, cl, t, sz.replayIDs, 64, sz.bodyBytes, logf)
	if err != nil {
		return PostFigure{}, PostFigure{}, st.fig, err
	}
	d := sz.phase / time.Duration(rounds)
	logf("new posts over http at 16 and at 64 clients, and replays at 64, in %d alternating rounds of %s", rounds, d)
	var s16, s64, sr sample
	var cpu time.Duration
	cpuOK := true
	for r := 0; r < rounds; r++ {
		s16.add(newPostsSample(ctx, cl, t.URLs, "http", Load{Clients: 16, Duration: d, MaxOps: sz.maxOps}, sz.bodyBytes))
		before, ok1 := cpuOf(t.Pids)
		s64.add(newPostsSample(ctx, cl, t.URLs, "http", Load{Clients: 64, Duration: d, MaxOps: sz.maxOps}, sz.bodyBytes))
		after, ok2 := cpuOf(t.Pids)
		if ok1 && ok2 {
			cpu += after - before
		} else {
			cpuOK = false
		}
		sr.add(st.replay(ctx, cl, Load{Clients: 64, Duration: d, MaxOps: sz.maxOps}))
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
	rf, err := st.finish(ctx, cl, sr, newPosts)
	if err == nil {
		logf("  %.0f replays/s, p99 %.1f ms; stored %d → %d with %d new posts alongside (exact: %v)", rf.PerSecond, rf.P99Ms, rf.StoredBefore, rf.StoredAfter, rf.NewPosts, rf.Exact)
	}
	return p16, p64, rf, err
}
