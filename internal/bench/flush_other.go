//go:build !unix

package bench

// flushDisk is a no-op where there is no sync(2).
func flushDisk() {}
