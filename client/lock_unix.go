//go:build unix

package client

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on f, waiting for it. The
// kernel releases it if the process dies, so a killed client never leaves
// the journal locked.
func lockFile(f *os.File) error {
	for range 100 { // EINTR only; bounded all the same
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
	return syscall.EINTR
}

func unlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
