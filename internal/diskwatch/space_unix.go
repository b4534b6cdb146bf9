//go:build unix

package diskwatch

import "syscall"

// Space returns the bytes free to this process and the size of the file
// system that holds dir.
func Space(dir string) (free, size uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}
