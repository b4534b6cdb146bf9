//go:build unix

package bench

import "syscall"

// flushDisk asks the kernel to write every dirty page out now.
func flushDisk() { syscall.Sync() }
