package search

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// BenchmarkIndexSteady measures what following the state costs a node
// in CPU per post, at the rates the bench's 16- and 64-client phases
// reach: a real state machine takes 10 posts every 10 ms (1,000/s) or 20
// (2,000/s) for 10 s on top of 20,000 entries, first with no index, then
// with one following it as a node does (production configuration), and
// the difference in the process's CPU (user + system, getrusage) is the
// index's. Run:
//
//	go test -run '^$' -bench IndexSteady -benchtime 1x ./internal/search/
func BenchmarkIndexSteady(b *testing.B) {
	for _, rate := range []int{1000, 2000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			for range b.N {
				without := steadyCPU(b, rate, false)
				with := steadyCPU(b, rate, true)
				b.ReportMetric(without, "µs-cpu/post-no-index")
				b.ReportMetric(with-without, "µs-cpu/post-index")
			}
		})
	}
}

// steadyCPU seeds a fresh board, then posts rate posts/s for 10 s and
// returns the process's CPU per post over that window plus the time the
// index then takes to catch up.
func steadyCPU(b *testing.B, rate int, index bool) float64 {
	dir := b.TempDir()
	f, err := fsm.Open(filepath.Join(dir, "state.db"), fsm.Options{InitialMmapSize: 1 << 26})
	if err != nil {
		b.Fatal(err)
	}
	bd := &board{t: b, dir: dir, f: f, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), wait: 10 * time.Minute}
	defer f.Close()
	if index {
		x, err := Open(Config{Dir: filepath.Join(dir, "search"), State: f})
		if err != nil {
			b.Fatal(err)
		}
		bd.x = x
		defer x.Close()
	}
	r := rand.New(rand.NewPCG(1, 2))
	post := func(i, count int) {
		cmds := make([]fsm.Command, 0, count)
		for j := i; j < i+count; j++ {
			cmds = append(cmds, postCommand(bd.request(restarea.TypeQuestion, "", "question "+strconv.Itoa(j), benchBody(r, j), "agent-"+strconv.Itoa(j%50))))
		}
		bd.apply(cmds...)
	}
	const seed = 20_000
	for i := 0; i < seed; i += 100 {
		post(i, 100)
	}
	if index {
		bd.waitIndexed()
	}
	per := rate / 100
	start := cpuNow()
	next := time.Now()
	for i := range 1000 {
		post(seed+i*per, per)
		next = next.Add(10 * time.Millisecond)
		time.Sleep(time.Until(next))
	}
	if index {
		bd.waitIndexed()
	}
	return float64((cpuNow() - start).Microseconds()) / float64(1000*per)
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
