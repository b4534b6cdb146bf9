// Package powerfs is a FUSE file system that simulates power cuts, for
// tests: it passes I/O through to a backing directory but keeps, in
// memory, every write, truncate and name operation that no fsync has
// covered yet, as a machine's page cache and a file system's unwritten
// metadata do. Cut drops all of it at once, as losing power would; the
// backing directory then holds exactly what the fsyncs made durable, and
// mounting it again is the reboot. See DESIGN.md for what it simulates
// and what it does not.
package powerfs

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Options tune a mount.
type Options struct {
	// SyncBacking fsyncs the backing directory's files when an fsync on
	// the mount writes them. Off by default: what a simulated cut keeps
	// only has to reach the backing directory, and the host does not lose
	// power in a test.
	SyncBacking bool
	// WritebackCache lets the kernel buffer writes and send them here in
	// large runs (FUSE's writeback cache). Many small writes then cost a
	// fraction of the FUSE round trips, which is most of a harness's CPU.
	// What a cut loses is the same: an fsync flushes the kernel's pages
	// here before it is answered, and pages still in the kernel at a cut
	// die with the processes that wrote them. What changes: a write after
	// a cut may be accepted into the kernel's cache (its fsync answers
	// EIO), and the kernel, not powerfs, keeps a file's size and times
	// while it caches writes to it.
	WritebackCache bool
	// Logger receives write-back failures; nil → slog.Default().
	Logger *slog.Logger
	// Debug logs every FUSE request (very verbose).
	Debug bool
}

// FS is one mounted powerfs. Its methods are safe for concurrent use.
type FS struct {
	fuse.RawFileSystem // ENOSYS for what is not implemented (xattrs, locks: see DESIGN.md)

	backing, mountpoint string
	opts                Options
	log                 *slog.Logger
	srv                 *fuse.Server

	mu     sync.Mutex
	cut    bool
	nodes  map[uint64]*node
	next   uint64
	dirs   map[uint64][]fuse.DirEntry // open directory snapshots by handle
	nextFh uint64
}

// Stats counts what a cut would lose now.
type Stats struct {
	// PendingBytes is the unsynced file data held in memory (whole pages).
	PendingBytes int64 `json:"pending_bytes"`
	// PendingFiles counts files with unsynced writes or truncates.
	PendingFiles int `json:"pending_files"`
	// PendingNameOps counts name operations (create, rename, unlink,
	// mkdir, rmdir, link, symlink) not yet covered by their directory's
	// fsync, per directory: a rename between two directories counts in
	// both.
	PendingNameOps int `json:"pending_name_ops"`
	// Cut reports whether the power has been cut on this mount.
	Cut bool `json:"cut"`
}

// Mount serves the synced state held in backing (created if missing; an
// empty directory is an empty file system) at mountpoint, which must
// exist. It returns once the kernel has the mount.
func Mount(backing, mountpoint string, opts Options) (*FS, error) {
	if backing == "" || mountpoint == "" {
		return nil, errors.New("powerfs: backing and mountpoint must both be given")
	}
	if err := os.MkdirAll(backing, 0o700); err != nil {
		return nil, fmt.Errorf("powerfs: backing: %w", err)
	}
	fs := &FS{
		RawFileSystem: fuse.NewDefaultRawFileSystem(),
		backing:       backing, mountpoint: mountpoint, opts: opts, log: opts.Logger,
		dirs: map[uint64][]fuse.DirEntry{},
	}
	if fs.log == nil {
		fs.log = slog.Default()
	}
	if err := fs.load(); err != nil {
		return nil, err
	}
	mo := &fuse.MountOptions{
		FsName: "powerfs", Name: "powerfs",
		// xattrs are refused (ENOTSUP); flock and POSIX locks are left
		// to the kernel, which keeps them locally: right for one machine.
		DisableXAttrs:      true,
		EnableLocks:        false,
		DisableReadDirPlus: true, // one place that counts lookups: Lookup
		MaxWrite:           1 << 20,
		Debug:              opts.Debug,
	}
	if opts.WritebackCache {
		mo.ExtraCapabilities = fuse.CAP_WRITEBACK_CACHE
	}
	srv, err := fuse.NewServer(fs, mountpoint, mo)
	if err != nil {
		return nil, fmt.Errorf("powerfs: mount %s: %w", mountpoint, err)
	}
	fs.srv = srv
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		srv.Unmount()
		return nil, fmt.Errorf("powerfs: mount %s: %w", mountpoint, err)
	}
	return fs, nil
}

// Cut simulates a power cut: every write, truncate and name operation
// not yet covered by an fsync is dropped, and every operation on the
// mount fails with EIO from now on, until it is unmounted and mounted
// again from the backing directory. Pages the kernel already holds (an
// mmap of a file) may still be read by a process that keeps running:
// kill it too, as the power would.
func (fs *FS) Cut() {
	if fs.drop() {
		fs.log.Info("powerfs: power cut", "mount", fs.mountpoint)
	}
}

// drop forgets everything pending; it reports whether it had not already.
func (fs *FS) drop() bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.cut {
		return false
	}
	fs.cut = true
	for _, n := range fs.nodes {
		if n.data != nil {
			n.data.close()
		}
	}
	fs.nodes, fs.dirs = nil, nil
	return true
}

// Stats reports what a Cut would lose now.
func (fs *FS) Stats() Stats {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	s := Stats{Cut: fs.cut}
	for _, n := range fs.nodes {
		switch {
		case n.isFile() && n.data.dirty():
			s.PendingFiles++
			s.PendingBytes += n.data.pendingBytes()
		case n.isDir():
			s.PendingNameOps += n.pending
		}
	}
	return s
}

// Mountpoint is where the file system is mounted.
func (fs *FS) Mountpoint() string { return fs.mountpoint }

// Unmount detaches the file system. Without a Cut first, pending writes
// and names are dropped just the same (a mount is not a clean shutdown:
// only fsync makes anything durable). If a process still holds files
// open, the mount is detached lazily.
func (fs *FS) Unmount() error {
	err := fs.srv.Unmount()
	if err != nil {
		if derr := syscall.Unmount(fs.mountpoint, syscall.MNT_DETACH); derr != nil {
			return fmt.Errorf("powerfs: unmount %s: %v; lazy unmount: %w", fs.mountpoint, err, derr)
		}
	}
	fs.drop()
	return nil
}
