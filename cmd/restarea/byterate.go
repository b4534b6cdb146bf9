package main

import (
	"fmt"
	"strconv"
	"strings"
)

// parseByteRate reads a rate in bytes per second written as a number and
// an optional binary unit (B, KiB, MiB, GiB): "4MiB" is 4,194,304 bytes
// per second, "0" is zero.
func parseByteRate(s string) (int64, error) {
	units := []struct {
		suffix string
		size   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	num, size := strings.TrimSpace(s), int64(1)
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, size = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.size
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/size {
		return 0, fmt.Errorf("%q is not a rate in bytes per second (a whole number with B, KiB, MiB or GiB: 4MiB)", s)
	}
	return n * size, nil
}
