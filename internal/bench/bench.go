package bench

import (
	"context"
	"fmt"
	"os"
	"time"
)

// Options choose the target and the sizes of a run.
type Options struct {
	// Binary is the restarea executable the bench starts nodes with.
	Binary string
	// Local starts a cluster of this many node processes; 0 with URLs
	// targets a running cluster instead.
	Local int
	URLs  []string
	// Dir holds data directories and scratch files ("" → a temporary
	// directory, removed afterwards).
	Dir string
	// Quick runs small sizes and short phases (the CI smoke mode).
	Quick bool
	// Growth seeds single nodes for the growth, paging, disk and memory
	// figures (needs Binary; only with Local).
	Growth bool
	// ProfileDir, when set (only with Local), adds a phase of new posts
	// at 64 clients, and the single node's phase, during which every node
	// records a CPU profile into this directory.
	ProfileDir string
	// Logf receives progress lines; nil → silent.
	Logf func(format string, args ...any)
}

// sizes are the bounds of one run.
type sizes struct {
	phase, fsync        time.Duration
	maxOps              int
	clients, mcpClients []int
	// rounds is how many alternating rounds share one phase's time
	// (mixedRounds); warm is the unmeasured lead-in of each round.
	rounds                   int
	warm                     time.Duration
	replayIDs, threadReplies int
	small, big, bigThread    int
	bodyBytes                int
	growthRounds             int
}

func sizesFor(quick bool) sizes {
	if quick {
		return sizes{phase: 700 * time.Millisecond, fsync: 500 * time.Millisecond, maxOps: 20_000,
			clients: []int{1, 8}, mcpClients: []int{1, 8, 64}, rounds: 2, warm: 200 * time.Millisecond, replayIDs: 1000, threadReplies: 200,
			small: 1_000, big: 10_000, bigThread: 1_000, bodyBytes: 512, growthRounds: 1}
	}
	return sizes{phase: 5 * time.Second, fsync: 2 * time.Second, maxOps: 1_000_000,
		clients: []int{1, 8}, mcpClients: []int{1, 8, 64}, rounds: 4, warm: 1500 * time.Millisecond, replayIDs: 1000, threadReplies: 1000,
		small: 10_000, big: 1_000_000, bigThread: 100_000, bodyBytes: 512, growthRounds: 3}
}

// Run measures the target described by o and returns the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	sz := sizesFor(o.Quick)
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "restarea-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	start := time.Now()
	rep := &Report{Machine: describeMachine(dir), Quick: o.Quick, StartedAt: start.UTC().Format(time.RFC3339)}
	cl := NewClient(128)

	logf("fsync ceiling: 4 KiB append + fsync in %s for %s", dir, sz.fsync)
	rate, err := FsyncRate(dir, sz.fsync)
	if err != nil {
		return nil, fmt.Errorf("fsync probe: %w", err)
	}
	rep.FsyncPerSec = rate
	logf("  %.0f fsyncs/s", rate)

	var t *Target
	if o.Local > 0 {
		rep.Target = fmt.Sprintf("local cluster of %d node processes", o.Local)
		logf("starting %s", rep.Target)
		t, err = StartLocal(ctx, o.Binary, o.Local, dir+"/cluster", o.ProfileDir != "", logf)
		if err != nil {
			return nil, err
		}
		defer t.Close()
	} else {
		if len(o.URLs) == 0 {
			return nil, fmt.Errorf("bench: give a local cluster size or node URLs")
		}
		t = Remote(o.URLs)
		rep.Target = fmt.Sprintf("running cluster of %d nodes", len(t.URLs))
	}
	rep.Nodes = len(t.URLs)
	if _, err := t.Leader(ctx, cl); err != nil {
		return nil, err
	}
	if rep.ToolsList, err = toolsListSizes(ctx, cl, t.URLs[0]); err != nil {
		return nil, err
	}
	for _, f := range rep.ToolsList {
		logf("mcp tools/list at %q: %d bytes", f.Revision, f.Bytes)
	}

	for _, c := range sz.clients {
		logf("new posts over http: %d clients for %s", c, sz.phase)
		st, cpu := withCPU(t.Pids, func() Stats {
			return newPosts(ctx, cl, t.URLs, "http", Load{Clients: c, Duration: sz.phase, MaxOps: sz.maxOps}, sz.bodyBytes)
		})
		logf("  %.0f posts/s, p50 %.1f ms, p99 %.1f ms, %d errors, %.3f ms CPU per post (nodes)", st.PerSecond, st.P50Ms, st.P99Ms, st.Errors, cpu)
		rep.Posts = append(rep.Posts, PostFigure{Channel: "http", Clients: c, Stats: st, CPUMsPerPost: cpu})
	}
	p16, p64, rs, err := mixedRounds(ctx, cl, t, sz, logf)
	if err != nil {
		return nil, err
	}
	rep.Posts = append(rep.Posts, p16, p64)
	rep.Replay = &rs.fig
	var clusterProfiles []string
	var clusterProfiledOps, profiledLeader int
	if o.ProfileDir != "" && o.Local > 0 {
		if err := os.MkdirAll(o.ProfileDir, 0o750); err != nil {
			return nil, err
		}
		logf("profiled phase: new posts over http, 64 clients for %s", 2*sz.phase)
		clusterProfiles = profilePhase(ctx, t, o.ProfileDir, "cluster", 2*sz.phase, func() {
			st, cpu := withCPU(t.Pids, func() Stats {
				return newPosts(ctx, cl, t.URLs, "http", Load{Clients: 64, Duration: 2 * sz.phase, MaxOps: sz.maxOps}, sz.bodyBytes)
			})
			clusterProfiledOps = st.Ops
			logf("  %.0f posts/s, %.3f ms CPU per post (nodes, profiling on)", st.PerSecond, cpu)
		}, logf)
		if li, err := t.Leader(ctx, cl); err == nil {
			profiledLeader = li + 1
		}
		logf("profiled phase: replays of the storm's request_ids, 64 clients for %s", 2*sz.phase)
		var replayOps int
		replayProfiles := profilePhase(ctx, t, o.ProfileDir, "replay", 2*sz.phase, func() {
			st, cpu := withCPU(t.Pids, func() Stats {
				return rs.replay(ctx, cl, Load{Clients: 64, Duration: 2 * sz.phase, MaxOps: sz.maxOps}).stats()
			})
			replayOps = st.Ops
			logf("  %.0f replays/s, %.3f ms CPU per replay (nodes, profiling on)", st.PerSecond, cpu)
		}, logf)
		rep.ReplayBreakdown = newBreakdown(replayProfiles, replayOps, "", 0, profiledLeader, logf)
	}
	if len(t.URLs) > 1 {
		li, err := t.Leader(ctx, cl)
		if err != nil {
			return nil, err
		}
		fi := (li + 1) % len(t.URLs)
		logf("one client, posting to the leader and to a follower in turn, for %s", 2*sz.phase)
		pf := pinnedPosts(ctx, cl, t.URLs[li], t.URLs[fi], Load{Clients: 1, Duration: 2 * sz.phase, MaxOps: sz.maxOps}, sz.bodyBytes)
		logf("  leader p50 %.2f ms, follower p50 %.2f ms", pf.Leader.P50Ms, pf.Follower.P50Ms)
		rep.Pinned = &pf
	}
	for _, c := range sz.mcpClients {
		logf("new posts over mcp: %d clients for %s", c, sz.phase)
		st := newPosts(ctx, cl, t.URLs, "mcp", Load{Clients: c, Duration: sz.phase, MaxOps: sz.maxOps}, sz.bodyBytes)
		logf("  %.0f posts/s, p50 %.1f ms, p99 %.1f ms, %d errors", st.PerSecond, st.P50Ms, st.P99Ms, st.Errors)
		rep.Posts = append(rep.Posts, PostFigure{Channel: "mcp", Clients: c, Stats: st})
	}

	logf("reads: a thread of %d replies, read on a follower", sz.threadReplies)
	thread, _, err := postThread(ctx, cl, t.URLs, sz.threadReplies, sz.bodyBytes, Load{Clients: 64, Duration: time.Minute})
	if err != nil {
		return nil, err
	}
	if _, err := settledCount(ctx, cl, t); err != nil {
		return nil, err
	}
	f, err := t.Follower(ctx, cl)
	if err != nil {
		return nil, err
	}
	readLoad := Load{Clients: 8, Duration: sz.phase, MaxOps: sz.maxOps}
	rd, err := reads(ctx, cl, t.URLs[f], thread, readLoad)
	if err != nil {
		return nil, err
	}
	rd.Role = "follower"
	if len(t.URLs) == 1 {
		rd.Role = "leader (cluster of one)"
	}
	rep.Reads = &rd
	logf("  get_thread %.0f/s, list_replies %.0f pages/s", rd.GetThread.PerSecond, rd.ListReplies.PerSecond)
	for i, pid := range t.Pids {
		if pid > 0 {
			m, _ := ReadMemory(pid)
			rep.ClusterMemory = append(rep.ClusterMemory, NodeMemory{Node: i + 1, Memory: m})
		}
	}
	t.Close()

	var singleProfile string
	if o.Local > 1 {
		sf, sp, err := singleNode(ctx, cl, o.Binary, dir+"/single", o.ProfileDir, Load{Clients: 64, Duration: sz.phase, MaxOps: sz.maxOps}, sz.warm, sz.bodyBytes, logf)
		if err != nil {
			return nil, err
		}
		rep.Single, singleProfile = sf, sp
	}
	if o.ProfileDir != "" && o.Local > 0 {
		singleOps := 0
		if rep.Single != nil {
			singleOps = rep.Single.Ops
		}
		rep.ProfileBreakdown = newBreakdown(clusterProfiles, clusterProfiledOps, singleProfile, singleOps, profiledLeader, logf)
		if rep.ProfileBreakdown != nil {
			rep.ProfileBreakdown.logTable(logf)
		}
		if rep.ReplayBreakdown != nil {
			logf("  replays, for comparison with new posts above:")
			rep.ReplayBreakdown.logTable(logf)
		}
	}

	if o.Growth && o.Local > 0 {
		seeds := []Seed{{Entries: sz.small, BodyBytes: sz.bodyBytes}, {Entries: sz.big, ThreadReplies: sz.bigThread, BodyBytes: sz.bodyBytes}}
		g, err := growth(ctx, cl, o.Binary, dir, seeds, sz.growthRounds, Load{Clients: 64, Duration: sz.phase, MaxOps: sz.maxOps}, readLoad, logf)
		if err != nil {
			return nil, err
		}
		rep.Growth = g
	}
	rep.Seconds = time.Since(start).Seconds()
	rep.Targets = rep.checkTargets()
	return rep, nil
}
