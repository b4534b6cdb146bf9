//go:build !unix

package node

import "errors"

// diskSpace is not measured on this system: the disk gauges are absent.
func diskSpace(string) (free, size uint64, err error) {
	return 0, 0, errors.New("disk space is not measured on this system")
}
