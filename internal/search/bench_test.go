package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

var benchWords = strings.Fields(`timeout retry request post posted posting duplicate idempotent cluster leader
follower raft snapshot restore index search stemming cache network latency error conflict replay agent model
tool answer question reply thread cursor page limit window source budget queue batch apply commit disk fsync`)

var benchJa = []string{"接続が切れたので再試行しました。", "タイムアウトの後に同じ内容を送りました。", "検索の索引を再構築します。", "返信が見つかりません。"}

func benchBody(r *rand.Rand, i int) string {
	var b strings.Builder
	for j := range 20 + r.IntN(40) {
		if j > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(benchWords[r.IntN(len(benchWords))])
	}
	if i%5 == 0 {
		b.WriteString(" " + benchJa[r.IntN(len(benchJa))])
	}
	fmt.Fprintf(&b, " #%d", i)
	return b.String()
}

// BenchmarkSearch10e5 posts SEARCH_BENCH_N entries (default 10^5) with the
// indexer following, and reports the indexing lag (how long after its
// batch was applied an entry became searchable: p50, p99, and the
// catch-up after the last write), a full rebuild's time, the index size,
// and query latency. Run:
//
//	go test -run '^$' -bench Search10e5 -benchtime 200x ./internal/search/
func BenchmarkSearch10e5(b *testing.B) {
	n := 100_000
	if s := os.Getenv("SEARCH_BENCH_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	bd := newBoard(b)
	bd.x.Close()
	bd.x = nil
	x, err := Open(Config{Dir: bd.dir + "/search", State: bd.f})
	if err != nil {
		b.Fatal(err)
	}
	bd.x = x
	r := rand.New(rand.NewPCG(1, 2))
	const batch = 100
	var lags []time.Duration
	pending := map[uint64]time.Time{} // batch's last index → applied at
	start := time.Now()
	var mine restarea.SearchQuery
	for i := 0; i < n; i += batch {
		cmds := make([]fsm.Command, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			body := benchBody(r, j)
			cmds = append(cmds, postCommand(bd.request(restarea.TypeQuestion, "", "question "+strconv.Itoa(j), body, "agent-"+strconv.Itoa(j%50))))
			if j == n/2 {
				mine = restarea.SearchQuery{Q: body, Actor: "agent-" + strconv.Itoa(j%50), Since: bd.now}
			}
		}
		bd.apply(cmds...)
		if (i/batch)%10 == 0 {
			pending[bd.index] = time.Now()
		}
		for idx, at := range pending {
			if x.Watermark() >= idx {
				lags = append(lags, time.Since(at))
				delete(pending, idx)
			}
		}
	}
	posted := time.Since(start)
	last := time.Now()
	bd.waitIndexed()
	catchUp := time.Since(last)
	for _, at := range pending {
		lags = append(lags, time.Since(at)) // an upper bound: observed at the end
	}
	slices.Sort(lags)
	b.Logf("%d entries applied in %v (%.0f/s) with the indexer following; lag p50 %v p99 %v max %v; catch-up after the last write %v",
		n, posted.Round(time.Millisecond), float64(n)/posted.Seconds(), pct(lags, 50), pct(lags, 99), lags[len(lags)-1], catchUp.Round(time.Millisecond))

	// A full rebuild from the state.
	x.Close()
	os.RemoveAll(bd.dir + "/search")
	start = time.Now()
	x, err = Open(Config{Dir: bd.dir + "/search", State: bd.f})
	if err != nil {
		b.Fatal(err)
	}
	bd.x = x
	bd.waitIndexed()
	b.Logf("rebuild of %d entries: %v; index %d MiB on disk", n, time.Since(start).Round(time.Millisecond), dirSize(x.path)>>20)

	queries := []restarea.SearchQuery{
		{Q: "posting timeout"}, {Q: "再試行"}, {Q: "leader snapshot restore"}, mine,
		{Q: "duplicate", Type: restarea.TypeQuestion, Limit: 50},
	}
	if p := bd.search(mine); len(p.Results) == 0 || p.Results[0].Body != mine.Q {
		b.Fatalf("find_my_post at %d entries: %v", n, ids(p))
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := x.Search(context.Background(), queries[i%len(queries)]); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.Logf("query latency over %d queries (5 kinds, find_my_post included): p50 %v p99 %v", len(lat), pct(lat, 50), pct(lat, 99))
	b.ReportMetric(float64(pct(lat, 50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(pct(lat, 99).Microseconds()), "p99-µs")
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, len(d)*p/100)].Round(time.Microsecond)
}
