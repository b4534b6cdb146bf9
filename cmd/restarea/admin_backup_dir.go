package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/restarea/restarea/client"
)

// A kept backup of `restarea admin backup --dir` is named
// restarea-YYYYMMDDTHHMMSS.mmmZ.db, in UTC, so that names sort as the
// backups were taken; two in the same millisecond get _2, _3 ... before
// .db. Only names of exactly this form are ever removed by --keep.
const backupTimeLayout = "20060102T150405.000Z"

var backupNameRE = regexp.MustCompile(`^restarea-(\d{8}T\d{6}\.\d{3}Z)(?:_([1-9][0-9]*))?\.db$`)

// backupName is the name of the backup taken at t, with suffix seq when
// seq > 1.
func backupName(t time.Time, seq int) string {
	stamp := t.UTC().Format(backupTimeLayout)
	if seq > 1 {
		return fmt.Sprintf("restarea-%s_%d.db", stamp, seq)
	}
	return "restarea-" + stamp + ".db"
}

// keptBackup is one file of a backup directory named by backupName.
type keptBackup struct {
	name string
	at   time.Time
	seq  int
}

// parseBackupName reports whether name is one backupName gives, and when.
func parseBackupName(name string) (keptBackup, bool) {
	m := backupNameRE.FindStringSubmatch(name)
	if m == nil {
		return keptBackup{}, false
	}
	at, err := time.Parse(backupTimeLayout, m[1])
	if err != nil {
		return keptBackup{}, false
	}
	seq := 1
	if m[2] != "" {
		if seq, err = strconv.Atoi(m[2]); err != nil {
			return keptBackup{}, false
		}
	}
	return keptBackup{name: name, at: at, seq: seq}, true
}

// listBackups returns the backups in dir, oldest first. Other files, and
// directories whatever their names, are not backups.
func listBackups(dir string) ([]keptBackup, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []keptBackup
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if b, ok := parseBackupName(e.Name()); ok {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(x, y keptBackup) int {
		if c := x.at.Compare(y.at); c != 0 {
			return c
		}
		return x.seq - y.seq
	})
	return out, nil
}

// maxSameInstant bounds the names tried for backups taken in the same
// millisecond: more than this many means something else writes these
// names, and the command stops rather than loop.
const maxSameInstant = 1000

// writeBackupDir takes a backup into dir under a new name of its own
// (backupName of now), with everything writeBackup guarantees: checked,
// fsynced, never replacing a file. Then, if keep > 0, it removes the
// oldest backups beyond the newest keep (the new one counted) and fsyncs
// dir. It returns the new file's path and size and the names removed; an
// error after the backup was written still returns its path.
func writeBackupDir(ctx context.Context, a *client.Admin, dir string, keep int, now func() time.Time) (path string, n int64, removed []string, err error) {
	tmpName, n, err := downloadBackup(ctx, a, dir, "restarea")
	if err != nil {
		return "", 0, nil, err
	}
	defer os.Remove(tmpName) // the new name is a hard link: this one goes
	at := now()
	for seq := 1; ; seq++ {
		if seq > maxSameInstant {
			return "", 0, nil, fmt.Errorf("%s: %d backups named for %s already; not trying more names", dir, maxSameInstant, at.UTC().Format(backupTimeLayout))
		}
		path = filepath.Join(dir, backupName(at, seq))
		err = linkBackup(tmpName, path)
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	if err != nil {
		return "", 0, nil, err
	}
	if err := syncDir(dir); err != nil {
		return path, n, nil, err
	}
	if keep <= 0 {
		return path, n, nil, nil
	}
	removed, err = pruneBackups(dir, keep, filepath.Base(path))
	if err != nil {
		return path, n, removed, fmt.Errorf("the backup %s was written, but removing older ones failed: %w", path, err)
	}
	return path, n, removed, nil
}

// pruneBackups removes the oldest backups in dir beyond the newest keep.
// newest, the backup just written, is never removed, even when the clock
// was set back and older-looking names now sort after it.
func pruneBackups(dir string, keep int, newest string) ([]string, error) {
	all, err := listBackups(dir)
	if err != nil {
		return nil, err
	}
	others := slices.DeleteFunc(all, func(b keptBackup) bool { return b.name == newest })
	var removed []string
	for _, b := range others[:max(0, len(others)-(keep-1))] {
		if err := os.Remove(filepath.Join(dir, b.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, err
		}
		removed = append(removed, b.name)
	}
	if len(removed) > 0 {
		if err := syncDir(dir); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// checkBackupDir reports, before anything is sent, why dir cannot take
// backups.
func checkBackupDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--dir: %s is not a directory", dir)
	}
	return nil
}

// backupList formats names for a message: "a, b and c".
func backupList(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
