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

// benchFixture is built once per process: the benchmark's first run
// (b.N = 1) and its timed run share it.
var benchFixture struct {
	b        *board
	mine     restarea.SearchQuery
	mineBody string
	dir      string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchFixture.b != nil {
		benchFixture.b.close()
		os.RemoveAll(benchFixture.dir)
	}
	if attackFixture.b != nil {
		attackFixture.b.close()
		os.RemoveAll(attackFixture.dir)
	}
	os.Exit(code)
}

// BenchmarkSearch10e5 builds a state of SEARCH_BENCH_N entries (default
// 10^5) with the indexer following as fast as the state machine applies
// (a flood: the indexing rate), rebuilds the index from scratch, then
// posts 1,000 entries per second for 5 s on top and measures the
// indexing lag (applied → searchable, p50/p99), then query latency. Run:
//
//	go test -run '^$' -bench Search10e5 -benchtime 200x -timeout 30m ./internal/search/
func BenchmarkSearch10e5(b *testing.B) {
	if benchFixture.b == nil {
		buildFixture(b)
	}
	bd := benchFixture.b
	queries := []restarea.SearchQuery{
		{Q: "posting timeout"}, {Q: "再試行"}, {Q: "leader snapshot restore"}, benchFixture.mine,
		{Q: "duplicate", Type: restarea.TypeQuestion, Limit: 50}, {Q: `"leader snapshot restore"`},
	}
	for _, q := range queries { // warm
		bd.search(q)
	}
	names := []string{"posting timeout", "再試行", "leader snapshot restore", "find_my_post", "duplicate type=question limit=50", `"leader snapshot restore"`}
	var lat []time.Duration
	kind := make([][]time.Duration, len(queries))
	cpu := make([]time.Duration, len(queries)) // the process's CPU: steadier than latency on a shared machine
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0, c0 := time.Now(), cpuNow()
		if _, err := bd.x.Search(context.Background(), queries[i%len(queries)]); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		cpu[i%len(queries)] += cpuNow() - c0
		lat = append(lat, d)
		kind[i%len(queries)] = append(kind[i%len(queries)], d)
	}
	b.StopTimer()
	for i, k := range kind {
		slices.Sort(k)
		fmt.Printf("search bench: %-34s p50 %v p99 %v cpu %v/query (%d runs)\n", names[i], pct(k, 50), pct(k, 99),
			(cpu[i] / time.Duration(max(len(k), 1))).Round(time.Microsecond), len(k))
	}
	slices.Sort(lat)
	b.Logf("query latency over %d queries (6 kinds, find_my_post included): p50 %v p99 %v", len(lat), pct(lat, 50), pct(lat, 99))
	b.ReportMetric(float64(pct(lat, 50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(pct(lat, 99).Microseconds()), "p99-µs")
}

func buildFixture(b *testing.B) {
	n := 100_000
	if s := os.Getenv("SEARCH_BENCH_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	dir, err := os.MkdirTemp("", "search-bench")
	if err != nil {
		b.Fatal(err)
	}
	bd := newBoardAt(b, dir)
	bd.wait = 20 * time.Minute
	benchFixture.b, benchFixture.dir = bd, dir
	r := rand.New(rand.NewPCG(1, 2))
	post := func(i, count int) {
		cmds := make([]fsm.Command, 0, count)
		for j := i; j < i+count; j++ {
			body := benchBody(r, j)
			actor := "agent-" + strconv.Itoa(j%50)
			cmds = append(cmds, postCommand(bd.request(restarea.TypeQuestion, "", "question "+strconv.Itoa(j), body, actor)))
			if j == n/2 {
				// find_my_post: the first words of the body (the whole of
				// it can pass MaxSearchTerms), the actor and a time.
				w := strings.Fields(body)
				benchFixture.mine = restarea.SearchQuery{Q: strings.Join(w[:min(len(w), 12)], " "), Actor: actor, Since: bd.now}
				benchFixture.mineBody = body
			}
		}
		bd.apply(cmds...)
	}

	start := time.Now()
	for i := 0; i < n; i += 100 {
		post(i, min(100, n-i))
	}
	applied := time.Since(start)
	bd.waitIndexed()
	all := time.Since(start)
	b.Logf("flood: %d entries applied in %v (%.0f/s); indexed %v after the start (%.0f entries/s)",
		n, applied.Round(time.Millisecond), float64(n)/applied.Seconds(), all.Round(time.Millisecond), float64(n)/all.Seconds())

	bd.x.Close()
	os.RemoveAll(dir + "/search")
	start = time.Now()
	bd.open()
	bd.waitIndexed()
	b.Logf("rebuild of %d entries from the state: %v; index %d MiB on disk", n, time.Since(start).Round(time.Millisecond), dirSize(bd.x.path)>>20)

	// Paced writes on top of the 10^5: 10 entries every 10 ms.
	var lags []time.Duration
	pending := map[uint64]time.Time{}
	next := time.Now()
	for i := range 500 {
		post(n+i*10, 10)
		pending[bd.index] = time.Now()
		next = next.Add(10 * time.Millisecond)
		for time.Now().Before(next) {
			for idx, at := range pending {
				if bd.x.Watermark() >= idx {
					lags = append(lags, time.Since(at))
					delete(pending, idx)
				}
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	bd.waitIndexed()
	for _, at := range pending {
		lags = append(lags, time.Since(at)) // observed late: an upper bound
	}
	slices.Sort(lags)
	b.Logf("indexing lag at %d entries, 1,000 posts/s for 5 s: p50 %v p99 %v max %v",
		n, pct(lags, 50), pct(lags, 99), lags[len(lags)-1])
	if p := bd.search(benchFixture.mine); len(p.Results) == 0 || p.Results[0].Body != benchFixture.mineBody {
		b.Fatalf("find_my_post at %d entries: %v", n, ids(p))
	}
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, len(d)*p/100)].Round(time.Microsecond)
}
