package fsm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The state file is a cache of the raft log, not the record of it: every
// committed command is already on a quorum's disks, fsynced, in the log
// and in snapshots. So in unsynced mode a batch is committed to bbolt
// without fsync, which takes two fsyncs off the path of every write.
//
// A process crash loses nothing (the kernel's page cache holds what bbolt
// wrote). A machine crash may tear the file, because bbolt orders its data
// pages before its meta page only through fsync. The boot marker tells the
// two apart: before the first unsynced commit, the id of the running boot
// is written (and synced) beside the state file; a clean close syncs the
// file and writes "clean". On open, a state file whose marker names
// another boot was being written when a machine went down: it is set
// aside, and the node rebuilds its state from the last snapshot and the
// log (Rebuilt reports it, so the node lets raft restore that snapshot).

const markerClean = "clean"

// bootIDPath is where Linux publishes a random id for each boot.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// CurrentBootID returns this machine's boot id, or "" where the system does
// not publish one (the state file is then synced on every commit).
func CurrentBootID() string {
	b, err := os.ReadFile(bootIDPath)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (f *FSM) markerPath() string { return f.path + ".boot" }

// checkMarker decides, before the state file is opened, whether it can be
// trusted; an untrusted file is moved aside. It returns whether commits
// may skip fsync from now on.
func (f *FSM) checkMarker() (unsynced bool, err error) {
	boot := f.opts.BootID()
	marker, err := os.ReadFile(f.markerPath())
	switch {
	case errors.Is(err, os.ErrNotExist):
		// Only synced commits ever touched the file (or there is none).
	case err != nil:
		return false, fmt.Errorf("fsm: read %s: %w", f.markerPath(), err)
	default:
		m := strings.TrimSpace(string(marker))
		if m != markerClean && (boot == "" || m != boot) {
			if err := f.setAside(m); err != nil {
				return false, err
			}
		}
	}
	if !f.opts.Unsynced || boot == "" {
		// Synced mode: every commit is durable, so no marker is needed —
		// and a stale one must not condemn this file after a reboot.
		if err := os.Remove(f.markerPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, err
		}
		return false, syncDir(filepath.Dir(f.path))
	}
	return true, f.writeMarker(boot)
}

// setAside moves a possibly torn state file out of the way, keeping it for
// inspection, and records that the state must be rebuilt.
func (f *FSM) setAside(marker string) error {
	if _, err := os.Stat(f.path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	aside := fmt.Sprintf("%s.torn-%s", f.path, time.Now().UTC().Format("20060102T150405"))
	if err := os.Rename(f.path, aside); err != nil {
		return fmt.Errorf("fsm: set aside %s: %w", f.path, err)
	}
	f.rebuilt = true
	f.log.Warn("fsm: the state file was being written without fsync when the machine went down; it is set aside and rebuilt from the last snapshot and the raft log",
		"marker", marker, "set_aside", aside)
	return nil
}

// writeMarker replaces the marker durably: the rename only happens once
// the new content is on disk.
func (f *FSM) writeMarker(content string) error {
	tmp := f.markerPath() + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("fsm: marker: %w", err)
	}
	if _, err := out.WriteString(content + "\n"); err != nil {
		out.Close()
		return fmt.Errorf("fsm: marker: %w", err)
	}
	if err := syncClose(out); err != nil {
		return fmt.Errorf("fsm: marker: %w", err)
	}
	if err := os.Rename(tmp, f.markerPath()); err != nil {
		return fmt.Errorf("fsm: marker: %w", err)
	}
	return syncDir(filepath.Dir(f.path))
}

// Rebuilt reports whether Open found a state file torn by a machine crash
// and started from an empty one: the caller must restore the last snapshot
// (raft's NoSnapshotRestoreOnStart off) so the log replays onto it.
func (f *FSM) Rebuilt() bool { return f.rebuilt }

// Unsynced reports whether commits skip fsync (see Options.Unsynced).
func (f *FSM) Unsynced() bool { return f.unsynced }

// syncLoop flushes the state file every interval, so writeback errors
// surface within a second instead of being lost, and so a clean close
// has little left to write.
func (f *FSM) syncLoop(every time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		f.mu.RLock()
		var err error
		if f.db != nil {
			err = f.db.Sync()
		}
		f.mu.RUnlock()
		if err != nil {
			f.failSync(err)
		}
	}
}

// failSync stops the node: after a failed fsync the kernel may have dropped
// pages bbolt wrote, so the file can no longer be trusted even after a
// mere restart.
func (f *FSM) failSync(err error) {
	_ = f.writeMarker("failed-sync")
	f.log.Error("fsm: sync of the state file failed, stopping", "err", err)
	panic(fmt.Sprintf("fsm: sync state file: %v", err))
}
