package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// GrowthFigure is one seeded single node: new-post throughput on it,
// what it holds on disk and in memory afterwards.
type GrowthFigure struct {
	Seeded        int     `json:"seeded_entries"`
	StoredAfter   int     `json:"stored_after"`
	SeedSeconds   float64 `json:"seed_seconds"`
	Posts         Stats   `json:"posts_64"`
	Disk          Disk    `json:"disk"`
	BytesPerEntry float64 `json:"bytes_per_entry"`
	// RawPerEntry is the average JSON size of a seeded entry.
	RawPerEntry float64 `json:"raw_json_bytes_per_entry"`
	RatioToRaw  float64 `json:"ratio_to_raw"`
	Memory      Memory  `json:"memory"`
	// Paging is measured on the seeded long thread, when there is one.
	Paging *PagingFigure `json:"paging,omitempty"`
}

// growth seeds a store of s, serves it as one node and measures it.
func growth(ctx context.Context, cl *Client, binary, dir string, s Seed, l Load, readLoad Load, logf func(string, ...any)) (GrowthFigure, error) {
	var fig GrowthFigure
	sub := filepath.Join(dir, fmt.Sprintf("seed-%d", s.Entries))
	if err := os.MkdirAll(sub, 0o750); err != nil {
		return fig, err
	}
	defer os.RemoveAll(sub)
	backup := filepath.Join(sub, "backup.db")
	start := time.Now()
	s.Progress = func(done, total int) {
		logf("  seeding: %d of %d entries (%s)", done, total, time.Since(start).Round(time.Second))
	}
	seeded, err := WriteSeed(sub, s, backup)
	if err != nil {
		return fig, err
	}
	fig.Seeded, fig.SeedSeconds = seeded.Entries, time.Since(start).Seconds()
	fig.RawPerEntry = float64(seeded.RawJSONBytes) / float64(seeded.Entries)
	logf("  seeded %d entries in %s (backup %d MiB); restoring into a node", seeded.Entries, time.Since(start).Round(time.Second), seeded.BackupBytes>>20)
	t, err := StartSeeded(ctx, binary, sub, backup)
	if err != nil {
		return fig, err
	}
	defer t.Close()
	os.Remove(backup) // the node holds its own copies now
	logf("  node ready; posting with %d clients for %s", l.Clients, l.Duration)
	fig.Posts = newPosts(ctx, cl, t.URLs, "http", l, s.BodyBytes)
	if s.ThreadReplies > 0 {
		logf("  paging the %d-reply thread", s.ThreadReplies)
		p, err := paging(ctx, cl, t.URLs[0], seeded.ThreadID, readLoad, logf)
		if err != nil {
			return fig, err
		}
		fig.Paging = &p
	}
	n, err := cl.Gauge(ctx, t.URLs[0], "restarea_entries")
	if err != nil {
		return fig, err
	}
	fig.StoredAfter = int(n)
	if fig.Paging != nil {
		fig.Paging.StoredEntries = fig.StoredAfter
	}
	fig.Memory, _ = ReadMemory(t.Pids[0])
	fig.Disk = ReadDisk(t.DataDirs[0])
	fig.BytesPerEntry = float64(fig.Disk.StateBytes+fig.Disk.RaftLogBytes) / n
	if fig.RawPerEntry > 0 {
		fig.RatioToRaw = fig.BytesPerEntry / fig.RawPerEntry
	}
	return fig, nil
}
