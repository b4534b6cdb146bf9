package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// attackWords are the common words of the attack board: every entry's
// body is 40 to 80 of them, so each matches most entries.
var attackWords = strings.Fields(`able acid aged also area army away baby back ball band bank base bath bear beat
bell belt best bill bird blow blue boat body bomb bond bone book boom born boss both bowl bulk burn bush busy
call calm camp card care case cash cast cell chat chip city club coal coat code cold come cook cool cope copy
core cost crew crop dark data date dawn days dead deal dean dear debt deep deny desk dial diet disk does done
door dose down draw drew drop drug dual duke dust duty each earn ease east easy`)

// attackFixture is built once per process, like benchFixture.
var attackFixture struct {
	b   *board
	dir string
}

// buildAttackFixture is a board of 10^4 questions of common words.
func buildAttackFixture(b *testing.B) *board {
	if attackFixture.b != nil {
		return attackFixture.b
	}
	dir, err := os.MkdirTemp("", "search-attack")
	if err != nil {
		b.Fatal(err)
	}
	bd := newBoardAt(b, dir)
	bd.wait = 10 * time.Minute
	attackFixture.b, attackFixture.dir = bd, dir
	r := rand.New(rand.NewPCG(3, 4))
	const n = 10_000
	for i := 0; i < n; i += 100 {
		cmds := make([]fsm.Command, 0, 100)
		for j := i; j < i+100; j++ {
			var body strings.Builder
			for k := range 40 + r.IntN(40) {
				if k > 0 {
					body.WriteByte(' ')
				}
				body.WriteString(attackWords[r.IntN(len(attackWords))])
			}
			cmds = append(cmds, postCommand(bd.request(restarea.TypeQuestion, "", "question "+strconv.Itoa(j), body.String(), "agent-"+strconv.Itoa(j%50))))
		}
		bd.apply(cmds...)
	}
	bd.waitIndexed()
	return bd
}

// heapObjects is the live heap right now (runtime/metrics, no stop-the-world).
func heapObjects() uint64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runAttack runs q b.N times, one at a time, and reports its CPU and the
// peak of the live heap above what it was before each query.
func runAttack(b *testing.B, q restarea.SearchQuery) {
	bd := buildAttackFixture(b)
	var peak atomic.Uint64
	var cpu time.Duration
	var maxPeak uint64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runtime.GC()
		base := heapObjects()
		peak.Store(0)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				if h := heapObjects(); h > base && h-base > peak.Load() {
					peak.Store(h - base)
				}
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Microsecond):
				}
			}
		}()
		c0 := cpuTime()
		_, err := bd.x.Search(context.Background(), q)
		cpu += cpuTime() - c0
		close(stop)
		<-done
		if err != nil && i == 0 {
			b.Logf("refused: %v", err)
		}
		maxPeak = max(maxPeak, peak.Load())
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(maxPeak)/(1<<20), "peak-heap-MiB")
	fmt.Printf("search attack: q of %d words, cursor %q, limit %d: cpu %.1f ms/query, peak live heap %.1f MiB\n",
		len(strings.Fields(q.Q)), q.Cursor, q.Limit, float64(cpu.Microseconds())/1000/float64(b.N), float64(maxPeak)/(1<<20))
}

// BenchmarkSearchAttack is the search attack on 10^4 entries:
// about 80 common words, cursor offset 10,000, limit 50 (refused before it
// runs since the budget), then the most expensive query still admitted
// (MaxSearchTerms of those words at the deepest page) and cheaper ones.
// Run:
//
//	go test -run '^$' -bench SearchAttack -benchtime 5x ./internal/search/
func BenchmarkSearchAttack(b *testing.B) {
	b.Run("finding", func(b *testing.B) {
		runAttack(b, restarea.SearchQuery{Q: strings.Join(attackWords[:80], " "), Cursor: *encodeCursor(10000), Limit: 50})
	})
	admitted := strings.Join(attackWords[:restarea.MaxSearchTerms], " ")
	b.Run("deepest-admitted", func(b *testing.B) {
		runAttack(b, restarea.SearchQuery{Q: admitted, Cursor: *encodeCursor(restarea.MaxSearchDepth - 50), Limit: 50})
	})
	b.Run("first-page-admitted", func(b *testing.B) {
		runAttack(b, restarea.SearchQuery{Q: admitted, Limit: 50})
	})
	b.Run("16-terms-deepest", func(b *testing.B) {
		runAttack(b, restarea.SearchQuery{Q: strings.Join(attackWords[:16], " "), Cursor: *encodeCursor(restarea.MaxSearchDepth - 50), Limit: 50})
	})
}
