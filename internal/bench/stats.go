package bench

import (
	"sort"
	"time"
)

// Stats summarises one load phase.
type Stats struct {
	Ops       int     `json:"ops"`
	Errors    int     `json:"errors"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"per_second"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	// ErrorSample is the first error seen, if any.
	ErrorSample string `json:"error_sample,omitempty"`
}

// summarise computes the rate and percentiles of successful operations.
func summarise(lat []time.Duration, errors int, firstErr error, elapsed time.Duration) Stats {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	s := Stats{Ops: len(lat), Errors: errors, Seconds: elapsed.Seconds()}
	if elapsed > 0 {
		s.PerSecond = float64(len(lat)) / elapsed.Seconds()
	}
	s.P50Ms = ms(percentile(lat, 0.50))
	s.P99Ms = ms(percentile(lat, 0.99))
	if firstErr != nil {
		s.ErrorSample = firstErr.Error()
	}
	return s
}

// percentile returns the q-quantile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
