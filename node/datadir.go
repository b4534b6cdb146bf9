package node

import (
	"fmt"
	"os"
	"path/filepath"
)

// A power cut keeps a file's name only if the directory holding the name
// was fsynced after the name was made: an fsync of the file itself (bbolt
// syncs raft.db on every append) does not cover it. The node creates its
// data directory, node-id, raft.db, snapshots/ and search/ at start, so
// after creating them it fsyncs the data directory and its parent once.
// Without this a machine crash soon after the first start could lose
// raft.db's name, and with it every acknowledged write (found with
// internal/powerfs, which keeps unsynced names pending the way a real
// file system may).

// syncDataDir makes the names in the data directory, and its own name in
// its parent, durable.
func syncDataDir(dir string) error {
	dir = filepath.Clean(dir)
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := fsyncDir(d); err != nil {
			return fmt.Errorf("data dir: fsync %s: %w", d, err)
		}
	}
	return nil
}

func fsyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// writeSynced writes a small file and fsyncs it, so that a crash leaves
// it whole or absent (its name is made durable by syncDataDir).
func writeSynced(path string, b []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
