package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// FsyncRate appends 4 KiB blocks to a scratch file in dir, calling fsync
// after each, for about d (and at most 100,000 times), and returns the
// fsyncs per second: the ceiling of a write path that syncs once per
// write. The file is removed afterwards.
func FsyncRate(dir string, d time.Duration) (float64, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return 0, err
	}
	path := filepath.Join(dir, fmt.Sprintf("fsync-probe-%d", os.Getpid()))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer os.Remove(path)
	defer f.Close()
	block := make([]byte, 4096)
	for i := range block {
		block[i] = byte('a' + i%26)
	}
	start := time.Now()
	n := 0
	for time.Since(start) < d && n < 100_000 {
		if _, err := f.Write(block); err != nil {
			return 0, err
		}
		if err := f.Sync(); err != nil {
			return 0, err
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
