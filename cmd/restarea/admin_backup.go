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
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return 0, err
	}
	tmpName := tmp.Name()
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	n, err := a.Backup(ctx, tmp)
	if err != nil {
		return 0, err
	}
	if err := tmp.Sync(); err != nil {
		return 0, fmt.Errorf("sync %s: %w", tmpName, err)
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("close %s: %w", tmpName, err)
	}
	if _, err := fsm.CheckStateFile(tmpName); err != nil {
		return 0, fmt.Errorf("the server sent %d bytes that are not a readable state file: %w", n, err)
	}
	if force {
		err = os.Rename(tmpName, path)
	} else {
		// A hard link fails if path exists, where a rename would replace
		// it: the check before the copy may be stale by now.
		if err = os.Link(tmpName, path); err == nil {
			os.Remove(tmpName)
		} else if errors.Is(err, os.ErrExist) {
			return 0, fmt.Errorf("%s %w", path, errBackupExists)
		} else {
			err = fmt.Errorf("%w (without --force the file is put in place with a hard link, which this file system may refuse)", err)
		}
	}
	if err != nil {
		return 0, err
	}
	keep = true
	if d, err := os.Open(dir); err == nil {
		// The rename is durable once the directory is.
		err = d.Sync()
		d.Close()
		if err != nil {
			return n, fmt.Errorf("sync %s: %w", dir, err)
		}
	}
	return n, nil
}
