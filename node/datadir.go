package node

import (
	"fmt"
	"log/slog"
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
// its parent, durable. The parent may belong to someone else (a volume's
// root, a read-only directory on an exotic file system): failing to
// fsync it is logged, not fatal, since the data directory normally
// predates the node.
func syncDataDir(dir string, log *slog.Logger) error {
	dir = filepath.Clean(dir)
	if err := fsyncDir(dir); err != nil {
		return fmt.Errorf("data dir: fsync %s: %w", dir, err)
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := fsyncDir(parent); err != nil {
			log.Warn("data dir: cannot fsync its parent directory; if the data directory was just created, a machine crash may lose it", "dir", parent, "err", err)
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
