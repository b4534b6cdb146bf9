package main

import "testing"

func TestParseByteRate(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "512": 512, "100B": 100, "64KiB": 64 << 10, "4MiB": 4 << 20, " 2 GiB ": 2 << 30} {
		if got, err := parseByteRate(in); err != nil || got != want {
			t.Errorf("parseByteRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "4MB", "1.5MiB", "4 MiBs", "9999999999GiB"} {
		if got, err := parseByteRate(in); err == nil {
			t.Errorf("parseByteRate(%q) = %d, want an error", in, got)
		}
	}
}
