package powerfs_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/restarea/restarea/internal/powerfs"
)

// machine is one simulated machine: a backing directory (the disk) and
// the mount over it, which a reboot replaces.
type machine struct {
	t       *testing.T
	backing string
	mnt     string
	fs      *powerfs.FS
	opts    powerfs.Options
}

// bothCaches runs test on a machine mounted without and with the
// kernel's writeback cache: what survives a cut must not depend on it.
func bothCaches(t *testing.T, test func(t *testing.T, m *machine)) {
	for _, wb := range []bool{false, true} {
		name := map[bool]string{false: "write-through", true: "writeback"}[wb]
		t.Run(name, func(t *testing.T) { test(t, newMachine(t, powerfs.Options{WritebackCache: wb})) })
	}
}

// newMachine mounts powerfs in a temporary directory, or skips the test
// when this machine cannot mount FUSE.
func newMachine(t *testing.T, opts powerfs.Options) *machine {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("powerfs needs FUSE: /dev/fuse: %v", err)
	}
	m := &machine{t: t, opts: opts, backing: filepath.Join(t.TempDir(), "disk"), mnt: filepath.Join(t.TempDir(), "mnt")}
	if err := os.Mkdir(m.mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	fs, err := powerfs.Mount(m.backing, m.mnt, m.opts)
	if err != nil {
		t.Skipf("powerfs needs FUSE and permission to mount (fusermount, root or user_allow_other): %v", err)
	}
	m.fs = fs
	t.Cleanup(func() { m.fs.Unmount() })
	return m
}

// reboot cuts the power, unmounts and mounts the backing directory again.
func (m *machine) reboot() {
	m.t.Helper()
	m.fs.Cut()
	if err := m.fs.Unmount(); err != nil {
		m.t.Fatal(err)
	}
	fs, err := powerfs.Mount(m.backing, m.mnt, m.opts)
	if err != nil {
		m.t.Fatal(err)
	}
	m.fs = fs
}

func (m *machine) path(name string) string { return filepath.Join(m.mnt, name) }

func (m *machine) write(name, content string, fsync bool) {
	m.t.Helper()
	f, err := os.OpenFile(m.path(name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		m.t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		m.t.Fatal(err)
	}
	if fsync {
		if err := f.Sync(); err != nil {
			m.t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		m.t.Fatal(err)
	}
}

func (m *machine) syncDir(name string) {
	m.t.Helper()
	d, err := os.Open(m.path(name))
	if err != nil {
		m.t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		m.t.Fatal(err)
	}
}

// content returns the file's content, or "<none>" if it does not exist.
func (m *machine) content(name string) string {
	m.t.Helper()
	b, err := os.ReadFile(m.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return "<none>"
	}
	if err != nil {
		m.t.Fatal(err)
	}
	return string(b)
}

func (m *machine) want(name, content string) {
	m.t.Helper()
	if got := m.content(name); got != content {
		m.t.Errorf("%s = %q, want %q", name, got, content)
	}
}

// An fsynced write survives a cut; a write after it is lost, though it
// was read back before the cut.
func TestUnsyncedWriteIsLost(t *testing.T) {
	bothCaches(t, func(t *testing.T, m *machine) {
		m.write("a", "synced", true)
		m.syncDir(".")
		f, err := os.OpenFile(m.path("a"), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("UNSYNCED-AND-LONGER"), 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
		m.want("a", "UNSYNCED-AND-LONGER")
		if s := m.fs.Stats(); s.PendingBytes == 0 || s.PendingFiles != 1 {
			t.Errorf("stats before the cut: %+v, want pending data in one file", s)
		}
		m.reboot()
		m.want("a", "synced")
		if s := m.fs.Stats(); s != (powerfs.Stats{}) {
			t.Errorf("stats after the reboot: %+v, want nothing pending", s)
		}
	})
}

// A rename is undone by a cut unless its directory was fsynced.
func TestRenameNeedsTheDirectorysFsync(t *testing.T) {
	bothCaches(t, func(t *testing.T, m *machine) {
		m.write("old", "x", true)
		m.syncDir(".")
		if err := os.Rename(m.path("old"), m.path("new")); err != nil {
			t.Fatal(err)
		}
		m.reboot()
		m.want("old", "x")
		m.want("new", "<none>")

		if err := os.Rename(m.path("old"), m.path("new")); err != nil {
			t.Fatal(err)
		}
		m.syncDir(".")
		m.reboot()
		m.want("old", "<none>")
		m.want("new", "x")
	})
}

// A file created and fsynced whose directory was not fsynced is gone
// after a cut; an unlink without the directory's fsync is undone.
func TestCreateNeedsTheDirectorysFsync(t *testing.T) {
	bothCaches(t, func(t *testing.T, m *machine) {
		if err := os.Mkdir(m.path("d"), 0o700); err != nil {
			t.Fatal(err)
		}
		m.syncDir(".")
		m.write("d/f", "data", true)
		m.write("kept", "k", true)
		m.syncDir(".")
		if err := os.Remove(m.path("kept")); err != nil {
			t.Fatal(err)
		}
		if s := m.fs.Stats(); s.PendingNameOps != 2 {
			t.Errorf("stats: %+v, want 2 pending name operations (create d/f, unlink kept)", s)
		}
		m.reboot()
		m.want("d/f", "<none>")
		m.want("kept", "k")

		// The directory synced but not the file: the name is there, the data not.
		m.write("d/g", "data", false)
		m.syncDir("d")
		m.reboot()
		m.want("d/g", "")
	})
}

// A truncate is pending like a write: undone by a cut unless fsynced;
// bytes it cut off read as zeros when the file grows again.
func TestTruncate(t *testing.T) {
	bothCaches(t, func(t *testing.T, m *machine) {
		m.write("t", "0123456789", true)
		m.syncDir(".")
		if err := os.Truncate(m.path("t"), 3); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(m.path("t"), 6); err != nil {
			t.Fatal(err)
		}
		m.want("t", "012\x00\x00\x00")
		m.reboot()
		m.want("t", "0123456789")

		f, err := os.OpenFile(m.path("t"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(4); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		m.reboot()
		m.want("t", "0123")
	})
}

// After a cut every operation fails with EIO; a reboot shows exactly the
// synced state, across directories and large files.
func TestCutThenEverythingFails(t *testing.T) {
	bothCaches(t, func(t *testing.T, m *machine) {
		big := bytes.Repeat([]byte("0123456789abcdef"), 100_000) // 1.6 MB over many pages
		if err := os.MkdirAll(m.path("a/b"), 0o700); err != nil {
			t.Fatal(err)
		}
		m.syncDir(".")
		m.syncDir("a")
		f, err := os.Create(m.path("a/b/big"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(big); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		m.syncDir("a/b")
		if _, err := f.WriteAt([]byte("lost"), 5000); err != nil {
			t.Fatal(err)
		}
		m.write("a/unsynced", "u", true)

		m.fs.Cut()
		for what, err := range map[string]error{
			// The kernel's writeback cache may accept a write after the cut;
			// its fsync, next, fails all the same.
			"write": func() error {
				if _, err := f.WriteAt([]byte("x"), 0); err != nil || !m.opts.WritebackCache {
					return err
				}
				return syscall.EIO
			}(),
			"fsync": f.Sync(),
			"open":  func() error { _, err := os.Open(m.path("a/b/big")); return err }(),
			"mkdir": os.Mkdir(m.path("x"), 0o700),
			"stat":  func() error { _, err := os.Stat(m.path("a/b")); return err }(),
		} {
			if !errors.Is(err, syscall.EIO) {
				t.Errorf("%s after the cut: %v, want EIO", what, err)
			}
		}
		f.Close()
		if err := m.fs.Unmount(); err != nil {
			t.Fatal(err)
		}
		fs, err := powerfs.Mount(m.backing, m.mnt, m.opts)
		if err != nil {
			t.Fatal(err)
		}
		m.fs = fs
		if got, err := os.ReadFile(m.path("a/b/big")); err != nil || !bytes.Equal(got, big) {
			t.Errorf("a/b/big after the reboot: %d bytes, err %v; want the %d synced bytes", len(got), err, len(big))
		}
		m.want("a/unsynced", "<none>")
		ents, err := os.ReadDir(m.path("a"))
		if err != nil || len(ents) != 1 || ents[0].Name() != "b" {
			t.Errorf("a after the reboot: %v %v, want just b", ents, err)
		}
	})
}

// A directory moved between two directories moves whole with the fsync
// of either parent, and stays put with neither.
func TestDirectoryRenameIsAtomic(t *testing.T) {
	bothCaches(t, func(t *testing.T, m *machine) {
		for _, d := range []string{"a", "b", "a/sub"} {
			if err := os.Mkdir(m.path(d), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		m.write("a/sub/f", "f", true)
		m.syncDir("a/sub")
		m.syncDir("a")
		m.syncDir("b")
		m.syncDir(".")
		for _, parent := range []string{"", "b", "a"} {
			if err := os.Rename(m.path("a/sub"), m.path("b/sub")); err != nil {
				t.Fatal(err)
			}
			if parent != "" {
				m.syncDir(parent)
			}
			m.reboot()
			if parent == "" {
				m.want("a/sub/f", "f")
				m.want("b/sub/f", "<none>")
				continue
			}
			m.want("a/sub/f", "<none>")
			m.want("b/sub/f", "f")
			// Back to a/sub for the next round, durably.
			if err := os.Rename(m.path("b/sub"), m.path("a/sub")); err != nil {
				t.Fatal(err)
			}
			m.syncDir("a")
			m.syncDir("b")
		}
	})
}
