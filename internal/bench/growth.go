package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// GrowthFigure is one seeded single node: new-post throughput on it,
// what it holds on disk and in memory afterwards.
type GrowthFigure struct {
	Seeded      int     `json:"seeded_entries"`
	StoredAfter int     `json:"stored_after"`
	SeedSeconds float64 `json:"seed_seconds"`
	// Posts is the round with the median throughput.
	Posts Stats `json:"posts_64"`
	// RoundsPerSec is every round's throughput, in the order run.
	RoundsPerSec  []float64 `json:"rounds_per_second"`
	Disk          Disk      `json:"disk"`
	BytesPerEntry float64   `json:"bytes_per_entry"`
	// RawPerEntry is the average JSON size of a seeded entry.
	RawPerEntry float64 `json:"raw_json_bytes_per_entry"`
	RatioToRaw  float64 `json:"ratio_to_raw"`
	Memory      Memory  `json:"memory"`
	// Paging is measured on the seeded long thread, when there is one.
	Paging *PagingFigure `json:"paging,omitempty"`
}

// growthWarmup is posted, unmeasured, to each node before the rounds, so
// every size is measured on a node past its first batches and allocations.
const growthWarmup = time.Second

// seededNode is one seeded store served as a single node.
type seededNode struct {
	seed   Seed
	fig    GrowthFigure
	thread string
	t      *Target
	rounds []Stats
}

// growth seeds a store of each of seeds, serves them all as single nodes
// at once and measures new posts on them in alternating rounds. A phase
// of a few seconds on a shared machine is noisy; alternating spreads the
// drift (other load, the disk's writeback) over every size alike, and the
// median round is reported.
func growth(ctx context.Context, cl *Client, binary, dir string, seeds []Seed, rounds int, l Load, readLoad Load, logf func(string, ...any)) ([]GrowthFigure, error) {
	nodes := make([]*seededNode, 0, len(seeds))
	defer func() {
		for _, n := range nodes {
			if n.t != nil {
				n.t.Close()
			}
		}
	}()
	for _, s := range seeds {
		n := &seededNode{seed: s}
		nodes = append(nodes, n)
		if err := n.start(ctx, binary, dir, logf); err != nil {
			return nil, err
		}
	}
	// Seeding and restoring write gigabytes at the large size; left to the
	// kernel's writeback, they would slow the nodes' fsyncs during the
	// rounds and charge the store's size for the bench's own writes.
	logf("growth: flushing the seeds' writes to disk, warming each node up for %s", growthWarmup)
	flushDisk()
	for _, n := range nodes {
		newPosts(ctx, cl, n.t.URLs, "http", Load{Clients: l.Clients, Duration: growthWarmup, MaxOps: l.MaxOps}, n.seed.BodyBytes)
	}
	for r := 1; r <= rounds; r++ {
		for _, n := range nodes {
			st := newPosts(ctx, cl, n.t.URLs, "http", l, n.seed.BodyBytes)
			logf("  round %d of %d, %d entries: %.0f posts/s at %d clients, p50 %.1f ms, p99 %.1f ms, %d errors",
				r, rounds, n.fig.Seeded, st.PerSecond, l.Clients, st.P50Ms, st.P99Ms, st.Errors)
			n.rounds = append(n.rounds, st)
		}
	}
	figs := make([]GrowthFigure, 0, len(nodes))
	for _, n := range nodes {
		if err := n.finish(ctx, cl, readLoad, logf); err != nil {
			return nil, err
		}
		figs = append(figs, n.fig)
	}
	return figs, nil
}

// medianRound is the round with the median throughput (the upper one of
// an even count), or no figure when there were no rounds.
func medianRound(rounds []Stats) Stats {
	if len(rounds) == 0 {
		return Stats{}
	}
	sorted := append([]Stats(nil), rounds...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].PerSecond < sorted[j].PerSecond })
	return sorted[len(sorted)/2]
}

// start seeds the store offline and serves it as a node; its files are
// removed when the node is closed, or at once if it cannot start.
func (n *seededNode) start(ctx context.Context, binary, dir string, logf func(string, ...any)) (err error) {
	s := n.seed
	logf("growth: a single node seeded with %d entries", s.Entries)
	sub := filepath.Join(dir, fmt.Sprintf("seed-%d", s.Entries))
	if err := os.MkdirAll(sub, 0o750); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(sub)
		}
	}()
	backup := filepath.Join(sub, "backup.db")
	start := time.Now()
	s.Progress = func(done, total int) {
		logf("  seeding: %d of %d entries (%s)", done, total, time.Since(start).Round(time.Second))
	}
	seeded, err := WriteSeed(sub, s, backup)
	if err != nil {
		return err
	}
	n.thread = seeded.ThreadID
	n.fig.Seeded, n.fig.SeedSeconds = seeded.Entries, time.Since(start).Seconds()
	n.fig.RawPerEntry = float64(seeded.RawJSONBytes) / float64(seeded.Entries)
	logf("  seeded %d entries in %s (backup %d MiB); restoring into a node", seeded.Entries, time.Since(start).Round(time.Second), seeded.BackupBytes>>20)
	t, err := StartSeeded(ctx, binary, sub, backup)
	if err != nil {
		return err
	}
	os.Remove(backup) // the node holds its own copies now
	stop := t.close
	t.close = func() error { err := stop(); os.RemoveAll(sub); return err }
	n.t = t
	return nil
}

// finish picks the median round and measures paging, disk and memory.
func (n *seededNode) finish(ctx context.Context, cl *Client, readLoad Load, logf func(string, ...any)) error {
	n.fig.Posts = medianRound(n.rounds)
	for _, r := range n.rounds {
		n.fig.RoundsPerSec = append(n.fig.RoundsPerSec, r.PerSecond)
	}
	url := n.t.URLs[0]
	if n.seed.ThreadReplies > 0 {
		logf("  paging the %d-reply thread", n.seed.ThreadReplies)
		p, err := paging(ctx, cl, url, n.thread, readLoad, logf)
		if err != nil {
			return err
		}
		n.fig.Paging = &p
	}
	stored, err := cl.Gauge(ctx, url, "restarea_entries")
	if err != nil {
		return err
	}
	n.fig.StoredAfter = int(stored)
	if n.fig.Paging != nil {
		n.fig.Paging.StoredEntries = n.fig.StoredAfter
	}
	n.fig.Memory, _ = ReadMemory(n.t.Pids[0])
	n.fig.Disk = ReadDisk(n.t.DataDirs[0])
	n.fig.BytesPerEntry = float64(n.fig.Disk.StateBytes+n.fig.Disk.RaftLogBytes) / stored
	if n.fig.RawPerEntry > 0 {
		n.fig.RatioToRaw = n.fig.BytesPerEntry / n.fig.RawPerEntry
	}
	logf("  %d entries: median %.0f posts/s at 64 clients; %.0f bytes/entry on disk (%.2f× raw JSON); RSS %d MiB",
		n.fig.Seeded, n.fig.Posts.PerSecond, n.fig.BytesPerEntry, n.fig.RatioToRaw, n.fig.Memory.RSSBytes>>20)
	return nil
}
