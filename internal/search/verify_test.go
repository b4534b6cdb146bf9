package search

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/testkit"
)

// An intact index reopens without a rebuild (every segment's CRC
// checks); one with a flipped byte in a segment is rebuilt from the
// state, the damage told, and finds every entry again.
func TestDamagedSegmentRebuilds(t *testing.T) {
	b := newBoard(t)
	var want []string
	for i := range 60 {
		want = append(want, b.question(fmt.Sprintf("Segment %d", i), "rotten bits on a disk", "a"))
	}
	b.waitIndexed()
	var damaged atomic.Int32
	open := func() {
		t.Helper()
		x, err := Open(Config{Dir: filepath.Join(b.dir, "search"), State: b.f, BatchSize: 50, Damaged: func() { damaged.Add(1) }})
		if err != nil {
			t.Fatal(err)
		}
		b.x = x
	}
	if err := b.x.Close(); err != nil {
		t.Fatal(err)
	}
	open()
	if b.x.Rebuilding() || damaged.Load() != 0 {
		t.Fatalf("an intact index: rebuilding=%v damaged=%d", b.x.Rebuilding(), damaged.Load())
	}
	if err := b.x.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(b.dir, "search", "index", "store", "*.zap"))
	if len(segs) == 0 {
		t.Fatal("no segment file")
	}
	testkit.RotMiddle(t, segs[0])
	open()
	if !b.x.Rebuilding() || damaged.Load() != 1 {
		t.Fatalf("a damaged index: rebuilding=%v damaged=%d", b.x.Rebuilding(), damaged.Load())
	}
	b.waitIndexed()
	assertAll(t, b, "rotten disk", want)
}

// BenchmarkVerifyIndex10e4 measures what Open adds to check an index of
// 10^4 entries: the CRC of every segment file (a read of the whole
// index) and bbolt's check of root.bolt. Run:
//
//	go test -run '^$' -bench VerifyIndex10e4 -benchtime 20x ./internal/search/
func BenchmarkVerifyIndex10e4(b *testing.B) {
	bd := newBoard(b)
	bd.wait = 10 * time.Minute
	r := rand.New(rand.NewPCG(5, 6))
	const n = 10_000
	for i := 0; i < n; i += 100 {
		cmds := make([]fsm.Command, 0, 100)
		for j := i; j < i+100; j++ {
			cmds = append(cmds, postCommand(bd.request(restarea.TypeQuestion, "", "question "+strconv.Itoa(j), benchBody(r, j), "agent-"+strconv.Itoa(j%50))))
		}
		bd.apply(cmds...)
	}
	bd.waitIndexed()
	path := bd.x.path
	if err := bd.x.Close(); err != nil {
		b.Fatal(err)
	}
	bd.x = nil
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := verifyRoot(path); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		idx, err := bleve.OpenUsing(path, storeConfig())
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := verifySegments(idx, path); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		idx.Close()
		b.StartTimer()
	}
	b.StopTimer()
	segs, _ := filepath.Glob(filepath.Join(path, "store", "*.zap"))
	b.ReportMetric(float64(dirSize(path))/(1<<20), "index-MiB")
	b.ReportMetric(float64(len(segs)), "segments")
}
