package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/restarea/restarea/client"
	"github.com/restarea/restarea/fsm"
)

// errBackupExists is returned when the backup file appeared while the
// copy ran and --force was not given.
var errBackupExists = errors.New("exists; add --force to replace it")

// writeBackup copies the cluster's backup to path atomically: a
// temporary file beside it (same file system, so the rename is atomic),
// fsynced, checked to be a readable state file (what `restarea restore`
// checks first), then moved into place and the directory fsynced. Without
// force an existing path is never replaced, even one created meanwhile.
func writeBackup(ctx context.Context, a *client.Admin, path string, force bool) (int64, error) {
	dir := filepath.Dir(path)
	tmpName, n, err := downloadBackup(ctx, a, dir, filepath.Base(path))
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmpName) // a no-op once it was renamed; after a link, the second name goes
	if force {
		err = os.Rename(tmpName, path)
	} else {
		err = linkBackup(tmpName, path)
		if errors.Is(err, os.ErrExist) {
			return 0, fmt.Errorf("%s %w", path, errBackupExists)
		}
	}
	if err != nil {
		return 0, err
	}
	if err := syncDir(dir); err != nil {
		return n, err
	}
	return n, nil
}

// downloadBackup copies the cluster's backup into a new temporary file in
// dir, named after base with a leading dot (so that no listing of backups
// takes it for one), fsyncs it and checks that it is a readable state
// file. On error nothing is left behind; on success the caller owns
// tmpName and must move it into place or remove it.
func downloadBackup(ctx context.Context, a *client.Admin, dir, base string) (tmpName string, n int64, err error) {
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return "", 0, err
	}
	name := tmp.Name()
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(name)
		}
	}()
	n, err = a.Backup(ctx, tmp)
	if err != nil {
		return "", 0, err
	}
	if err = tmp.Sync(); err != nil {
		return "", 0, fmt.Errorf("sync %s: %w", name, err)
	}
	if err = tmp.Close(); err != nil {
		return "", 0, fmt.Errorf("close %s: %w", name, err)
	}
	if _, err = fsm.CheckStateFile(name); err != nil {
		return "", 0, fmt.Errorf("the server sent %d bytes that are not a readable state file (removed, nothing kept): %w", n, err)
	}
	return name, n, nil
}

// linkBackup gives tmpName the name path unless path exists, even one
// created a moment ago: a hard link fails on an existing name where a
// rename would replace it. The error wraps os.ErrExist in that case.
func linkBackup(tmpName, path string) error {
	err := os.Link(tmpName, path)
	if err == nil || errors.Is(err, os.ErrExist) {
		return err
	}
	return fmt.Errorf("%w (a backup is put in place with a hard link, so that an existing file is never replaced; this file system may refuse it)", err)
}

// syncDir fsyncs dir: a rename, link or removal in it is durable only once
// the directory is.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
