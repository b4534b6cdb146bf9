package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Load bounds one phase: Clients goroutines issue operations until
// Duration has passed or MaxOps operations were started, whichever comes
// first.
type Load struct {
	Clients  int
	Duration time.Duration
	MaxOps   int
}

// Op performs operation number i for client c.
type Op func(ctx context.Context, c, i int) error

// Drive runs op under l and returns the figures. Latencies are those of
// successful operations; failed ones are counted as errors. No operation
// is cut off when the time is up: clients stop starting new ones and the
// phase ends when the last one has answered, so no write of this phase is
// still in flight during the next (each op is bounded by ctx and by the
// HTTP client's own timeout).
func Drive(ctx context.Context, l Load, op Op) Stats {
	return driveSample(ctx, l, op).stats()
}

// sample is what one phase measured, before it is summarised: samples of
// alternating rounds are merged into one figure.
type sample struct {
	lat      []time.Duration
	errors   int
	firstErr error
	elapsed  time.Duration
}

func (s sample) stats() Stats { return summarise(s.lat, s.errors, s.firstErr, s.elapsed) }

func (s *sample) add(o sample) {
	s.lat = append(s.lat, o.lat...)
	s.errors += o.errors
	if s.firstErr == nil {
		s.firstErr = o.firstErr
	}
	s.elapsed += o.elapsed
}

func driveSample(ctx context.Context, l Load, op Op) sample {
	if l.Clients < 1 {
		l.Clients = 1
	}
	deadline := time.Now().Add(l.Duration)
	var (
		next     atomic.Int64
		mu       sync.Mutex
		all      []time.Duration
		errors   int
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	for c := 0; c < l.Clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			var lat []time.Duration
			var errs int
			var fe error
			for ctx.Err() == nil && time.Now().Before(deadline) {
				i := int(next.Add(1) - 1)
				if l.MaxOps > 0 && i >= l.MaxOps {
					break
				}
				t := time.Now()
				err := op(ctx, c, i)
				switch {
				case err == nil:
					lat = append(lat, time.Since(t))
				default:
					errs++
					if fe == nil {
						fe = err
					}
				}
			}
			mu.Lock()
			all = append(all, lat...)
			errors += errs
			if firstErr == nil {
				firstErr = fe
			}
			mu.Unlock()
		}(c)
	}
	wg.Wait()
	return sample{lat: all, errors: errors, firstErr: firstErr, elapsed: time.Since(start)}
}
