package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/restarea/restarea/mcp"
)

// Report is everything one run measured.
type Report struct {
	Machine     Machine       `json:"machine"`
	Target      string        `json:"target"`
	Nodes       int           `json:"nodes"`
	Quick       bool          `json:"quick"`
	StartedAt   string        `json:"started_at"`
	Seconds     float64       `json:"seconds"`
	FsyncPerSec float64       `json:"fsync_per_second"`
	Posts       []PostFigure  `json:"posts"`
	Pinned      *PinnedFigure `json:"one_client_leader_follower,omitempty"`
	Replay      *ReplayFigure `json:"replay,omitempty"`
	// ReplayBreakdown is ProfileBreakdown for a profiled phase of replays
	// (its single-node column empty).
	ReplayBreakdown *ProfileBreakdown `json:"replay_profile_breakdown,omitempty"`
	Reads           *ReadFigure       `json:"reads,omitempty"`
	ClusterMemory   []NodeMemory      `json:"cluster_memory,omitempty"`
	Single          *SingleFigure     `json:"single_node,omitempty"`
	Growth          []GrowthFigure    `json:"growth,omitempty"`
	Targets         []Check           `json:"targets"`

	// ProfileBreakdown is the CPU per post by component, from the
	// profiles of a run with a profile directory.
	ProfileBreakdown *ProfileBreakdown `json:"profile_breakdown,omitempty"`

	// ToolsList is the size of tools/list at each MCP revision, measured
	// on the first node before any load.
	ToolsList []ToolsListFigure `json:"mcp_tools_list,omitempty"`
}

// NodeMemory is the resident memory of one node of the cluster.
type NodeMemory struct {
	Node int `json:"node"`
	Memory
}

// Check is one target of the issue, evaluated on this run's figures.
type Check struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Want  string  `json:"want"`
	Met   bool    `json:"met"`
}

// Post returns the figure for channel at clients, or nil.
func (r *Report) Post(channel string, clients int) *PostFigure {
	for i := range r.Posts {
		if r.Posts[i].Channel == channel && r.Posts[i].Clients == clients {
			return &r.Posts[i]
		}
	}
	return nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func (r *Report) checkTargets() []Check {
	var out []Check
	add := func(name string, v float64, want string, met bool) {
		out = append(out, Check{Name: name, Value: v, Want: want, Met: met})
	}
	p1, p16, p64, m64 := r.Post("http", 1), r.Post("http", 16), r.Post("http", 64), r.Post("mcp", 64)
	if pf := r.Pinned; pf != nil {
		v := ratio(pf.Follower.P50Ms, pf.Leader.P50Ms)
		add("one client: p50 through a follower / through the leader", v, "≤ 1.5", v > 0 && v <= 1.5)
	}
	if s := r.Single; s != nil && p64 != nil && p64.CPUMsPerPost > 0 {
		v := ratio(p64.CPUMsPerPost, s.CPUMsPerPost)
		add("CPU per post at 64 clients: all nodes / a single node", v, "≤ 2", v > 0 && v <= 2)
	}
	if p16 != nil && p64 != nil {
		v := ratio(p16.PerSecond, p64.PerSecond)
		add("new posts at 16 clients / at 64 clients", v, "≥ 0.6", v >= 0.6)
	}
	if p1 != nil && p64 != nil {
		v := ratio(p64.PerSecond, r.FsyncPerSec)
		add("new posts at 64 clients / fsyncs per second", v, "≥ 2", v >= 2)
		v = ratio(p64.PerSecond, p1.PerSecond)
		add("new posts at 64 clients / at 1 client", v, "≥ 15", v >= 15)
		v = ratio(p64.P99Ms, p1.P50Ms)
		add("p99 at 64 clients / p50 at 1 client", v, "≤ 20", v > 0 && v <= 20)
	}
	if r.Replay != nil && p64 != nil {
		v := ratio(r.Replay.PerSecond, p64.PerSecond)
		add("replays per second / new posts at 64 clients", v, "≥ 1.5", v >= 1.5)
	}
	if r.Replay != nil {
		v := float64(r.Replay.StoredAfter - r.Replay.StoredBefore - r.Replay.NewPosts)
		add("entries stored by the replay storm", v, fmt.Sprintf("= %d, no mismatch", r.Replay.RequestIDs), r.Replay.Exact)
	}
	if m64 != nil && p64 != nil {
		v := ratio(m64.PerSecond, p64.PerSecond)
		add("MCP / REST new posts at 64 clients", v, "≥ 0.5", v >= 0.5)
	}
	if len(r.ToolsList) > 0 {
		v := largestToolsList(r.ToolsList)
		add("MCP tools/list result, largest revision (bytes)", float64(v), fmt.Sprintf("≤ %d", mcp.MaxToolsListBytes), v <= mcp.MaxToolsListBytes)
	}
	var small, big *GrowthFigure
	if len(r.Growth) == 2 {
		small, big = &r.Growth[0], &r.Growth[1]
	}
	if big != nil && big.Paging != nil {
		v := ratio(big.Paging.PageK.P50Ms, big.Paging.Page1.P50Ms)
		add(fmt.Sprintf("page %d / page 1 of a %d-reply thread (p50)", big.Paging.K, big.Paging.ThreadReplies), v, "≤ 2", v > 0 && v <= 2)
	}
	if small != nil && big != nil {
		v := ratio(big.Posts.PerSecond, small.Posts.PerSecond)
		add(fmt.Sprintf("new posts at %d / at %d stored entries", big.Seeded, small.Seeded), v, "≥ 0.8", v >= 0.8)
		add(fmt.Sprintf("bytes on disk per entry / raw JSON (%d entries)", big.StoredAfter), big.RatioToRaw, "≤ 3", big.RatioToRaw > 0 && big.RatioToRaw <= 3)
		mib := float64(big.Memory.RSSBytes) / (1 << 20)
		add(fmt.Sprintf("resident memory of a node with %d entries (MiB)", big.StoredAfter), mib, "≤ 300", mib > 0 && mib <= 300)
	}
	return out
}

// WriteTable prints the report as a human-readable table.
func (r *Report) WriteTable(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "rest.area bench — %s; %d CPUs (%s), %d MiB RAM, %s, %s, %s%s\n",
		r.Target, m.CPUs, m.CPUModel, m.MemoryMiB, m.Filesystem, m.OS, m.GoVersion, map[bool]string{true: " — QUICK MODE", false: ""}[r.Quick])
	fmt.Fprintf(w, "disk ceiling: %.0f fsyncs/s (4 KiB append + fsync); \"× fsync\" is each rate divided by it\n", r.FsyncPerSec)
	writeToolsList(w, r.ToolsList)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "figure\tclients\trate /s\t× fsync\tp50 ms\tp99 ms\terrors\tCPU ms/post\t")
	rowCPU := func(name string, clients int, s Stats, cpu float64) {
		c := ""
		if cpu > 0 {
			c = fmt.Sprintf("%.3f", cpu)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%d\t%s\t\n", name, clients, s.PerSecond, ratio(s.PerSecond, r.FsyncPerSec), s.P50Ms, s.P99Ms, s.Errors, c)
	}
	row := func(name string, clients int, s Stats) { rowCPU(name, clients, s, 0) }
	for _, p := range r.Posts {
		rowCPU("new post "+strings.ToUpper(map[string]string{"http": "rest", "mcp": "mcp"}[p.Channel]), p.Clients, p.Stats, p.CPUMsPerPost)
	}
	if pf := r.Pinned; pf != nil {
		row("new post REST, leader only (alternating)", 1, pf.Leader)
		row("new post REST, follower only (alternating)", 1, pf.Follower)
	}
	if r.Replay != nil {
		rowCPU(fmt.Sprintf("replay storm (%d ids)", r.Replay.RequestIDs), 64, r.Replay.Stats, r.Replay.CPUMsPerReplay)
	}
	if r.Reads != nil {
		row("get_thread ("+r.Reads.Role+")", 8, r.Reads.GetThread)
		row("list_replies p.1 ("+r.Reads.Role+")", 8, r.Reads.ListReplies)
	}
	if sn := r.Single; sn != nil {
		rowCPU("single node: new post REST", 64, sn.Stats, sn.CPUMsPerPost)
	}
	for _, g := range r.Growth {
		row(fmt.Sprintf("new post REST, %d stored", g.Seeded), 64, g.Posts)
		if g.Paging != nil {
			row(fmt.Sprintf("list_replies p.1 of %d", g.Paging.ThreadReplies), 8, g.Paging.Page1)
			row(fmt.Sprintf("list_replies p.%d of %d", g.Paging.K, g.Paging.ThreadReplies), 8, g.Paging.PageK)
		}
	}
	tw.Flush()
	if r.Replay != nil {
		fmt.Fprintf(w, "\nreplay storm: entries stored %d before the %d originals, %d after the storm and %d new posts alongside (%d failed); mismatched answers %d → exact: %v\n",
			r.Replay.StoredBefore, r.Replay.RequestIDs, r.Replay.StoredAfter, r.Replay.NewPosts, r.Replay.NewPostErrors, r.Replay.Mismatches, r.Replay.Exact)
	}
	for _, nm := range r.ClusterMemory {
		fmt.Fprintf(w, "cluster node %d: RSS %.0f MiB (anon %.0f, file %.0f)\n", nm.Node, mib(nm.RSSBytes), mib(nm.AnonBytes), mib(nm.FileBytes))
	}
	for _, g := range r.Growth {
		fmt.Fprintf(w, "single node, %d seeded (%d after): state.db %.0f MiB, raft.db %.0f MiB, snapshots %.0f MiB; %.0f B/entry (state+raft) vs %.0f B raw JSON = %.2f×; RSS %.0f MiB (anon %.0f, file %.0f)\n",
			g.Seeded, g.StoredAfter, mib(g.Disk.StateBytes), mib(g.Disk.RaftLogBytes), mib(g.Disk.SnapshotBytes),
			g.BytesPerEntry, g.RawPerEntry, g.RatioToRaw, mib(g.Memory.RSSBytes), mib(g.Memory.AnonBytes), mib(g.Memory.FileBytes))
	}
	if r.ProfileBreakdown != nil {
		fmt.Fprintln(w)
		r.ProfileBreakdown.WriteTable(w)
	}
	fmt.Fprintln(w, "\ntargets:")
	for _, c := range r.Targets {
		mark := "MISSED"
		if c.Met {
			mark = "met"
		}
		fmt.Fprintf(w, "  %-6s %-58s %10.2f  (want %s)\n", mark, c.Name, c.Value, c.Want)
	}
	fmt.Fprintf(w, "\nrun took %.0f s\n", r.Seconds)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// WriteJSON writes the report to path as indented JSON.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
