package client

import (
	"net/http"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	base, max := 100*time.Millisecond, 2*time.Second
	cases := []struct {
		n        int
		min, max time.Duration
	}{
		{1, 50 * time.Millisecond, 100 * time.Millisecond},
		{2, 100 * time.Millisecond, 200 * time.Millisecond},
		{4, 400 * time.Millisecond, 800 * time.Millisecond},
		{10, time.Second, 2 * time.Second},
		{1000, time.Second, 2 * time.Second},
	}
	for _, tc := range cases {
		for range 50 {
			if d := backoff(tc.n, base, max); d < tc.min || d > tc.max {
				t.Fatalf("backoff(%d) = %s, want in [%s, %s]", tc.n, d, tc.min, tc.max)
			}
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"1", time.Second},
		{" 30 ", 30 * time.Second},
		{"-5", 0},
		{"soon", 0},
		{now.Add(10 * time.Second).Format(http.TimeFormat), 10 * time.Second},
		{now.Add(-10 * time.Second).Format(http.TimeFormat), 0},
	}
	for _, tc := range cases {
		if got := parseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
