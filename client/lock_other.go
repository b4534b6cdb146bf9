//go:build !unix

package client

import "os"

// lockFile is a no-op where flock(2) does not exist: appends from one
// process are still serialised by the Journal's mutex, but two processes
// sharing a journal there may interleave records.
func lockFile(*os.File) error { return nil }

func unlockFile(*os.File) error { return nil }
