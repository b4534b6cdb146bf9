//go:build !unix

package diskwatch

import "errors"

// Space is not measured on this system: the disk gauges are absent.
func Space(string) (free, size uint64, err error) {
	return 0, 0, errors.New("disk space is not measured on this system")
}
