package bench

import (
	"context"
	"time"
)

// SingleFigure is a cluster of one node process under the same 64-client
// load, in the same run: what replication costs is the cluster's figure
// against this one.
type SingleFigure struct {
	Stats
	CPUMsPerPost float64 `json:"cpu_ms_per_post"`
}

// singleNode starts one node under dir, posts to it with l and measures
// its CPU per post; with a profile directory, it profiles that phase and
// returns the profile's path ("" if none was written).
func singleNode(ctx context.Context, cl *Client, binary, dir, profileDir string, l Load, lead time.Duration, bodyBytes int, logf func(string, ...any)) (*SingleFigure, string, error) {
	logf("single node: new posts over http, %d clients for %s", l.Clients, l.Duration)
	t, err := StartLocal(ctx, binary, 1, dir, profileDir != "", logf)
	if err != nil {
		return nil, "", err
	}
	defer t.Close()
	if _, err := t.Leader(ctx, cl); err != nil {
		return nil, "", err
	}
	// Unmeasured, so the node is past its first batches and allocations,
	// as the cluster is by the time it takes 64 clients, and the measured
	// window holds the index's work at its steady rate, as the cluster's
	// rounds do (mixedRounds).
	warm := l
	warm.Duration = lead
	newPosts(ctx, cl, t.URLs, "http", warm, bodyBytes)
	var st Stats
	var cpu float64
	measure := func() {
		st, cpu = withCPU(t.Pids, func() Stats { return newPosts(ctx, cl, t.URLs, "http", l, bodyBytes) })
	}
	var path string
	if profileDir != "" {
		if paths := profilePhase(ctx, t, profileDir, "single", l.Duration, measure, logf); len(paths) > 0 {
			path = paths[0]
		}
	} else {
		measure()
	}
	logf("  %.0f posts/s, p50 %.1f ms, p99 %.1f ms, %d errors, %.3f ms CPU per post", st.PerSecond, st.P50Ms, st.P99Ms, st.Errors, cpu)
	return &SingleFigure{Stats: st, CPUMsPerPost: cpu}, path, nil
}
