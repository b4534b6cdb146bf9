package node_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

// raftDBSize is the size of n's raft log file.
func raftDBSize(b *testing.B, n *node.Node) int64 {
	fi, err := os.Stat(filepath.Join(n.DataDir(), "raft.db"))
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// BenchmarkRefusedPostsRaftLog sends the finding of issue 26 to a
// three-node cluster under the default per-source limit (30 a minute):
// one address fills its window, then sends 893 posts of 80 KB (20,000
// four-byte characters) over REST, spread over the three nodes from 8
// connections, every one answered 429. It prints how much each node's
// raft.db grew meanwhile, and how many entries the log gained. Run with
// -benchtime=1x.
func BenchmarkRefusedPostsRaftLog(b *testing.B) {
	const attack = 893
	for range b.N {
		b.StopTimer()
		nodes := testnode.StartCluster(b, 3, testnode.WithLimits(restarea.DefaultSettings().PerSourceLimit, restarea.DefaultSettings().GlobalLimit))
		leader := testnode.Leader(b, nodes)
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		for i := range restarea.DefaultSettings().PerSourceLimit.Count {
			if s := benchPost(b, c, nodes[i%3].URL(), benchQuestion()); s != http.StatusCreated {
				b.Fatalf("filling the window: status %d, want 201", s)
			}
		}
		testnode.WaitMembers(b, nodes, 3)
		before := make([]int64, len(nodes))
		for i, n := range nodes {
			before[i] = raftDBSize(b, n)
		}
		st, err := leader.ClusterStatus(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		first, term := st.CommitIndex, st.Term
		big := benchQuestion()
		big.Body = strings.Repeat("🦀", restarea.MaxBody)
		b.StartTimer()
		var refused int64
		statuses := make([]int, attack)
		runParallelN(attack, 8, func(i int) {
			req := big
			req.RequestID = benchQuestion().RequestID
			statuses[i] = benchPost(b, c, nodes[i%3].URL(), req)
		})
		b.StopTimer()
		for _, s := range statuses {
			if s != http.StatusTooManyRequests {
				b.Fatalf("status %d, want 429", s)
			}
			refused++
		}
		st, err = leader.ClusterStatus(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		var most int64
		for i, n := range nodes {
			grew := raftDBSize(b, n) - before[i]
			most = max(most, grew)
			b.Logf("node %d: raft.db %d → %d bytes (+%d)", i, before[i], before[i]+grew, grew)
		}
		var unlogged float64
		for _, n := range nodes {
			unlogged += counterB(b, n, "restarea_posts_refused_unlogged_total")
		}
		b.Logf("%v of them refused before the log (restarea_posts_refused_unlogged_total, all nodes)", unlogged)
		b.ReportMetric(unlogged, "refused-unlogged")
		b.Logf("%d posts answered 429; the log gained %d entries (raft term %d → %d: a new leader appends its own)", refused, st.CommitIndex-first, term, st.Term)
		b.ReportMetric(float64(most), "raftdb-growth-bytes")
		b.ReportMetric(float64(st.CommitIndex-first), "entries-appended")
	}
}

// runParallelN runs op(0..n-1) from g goroutines.
func runParallelN(n, g int, op func(i int)) {
	next := make(chan int)
	done := make(chan struct{})
	for range g {
		go func() {
			for i := range next {
				op(i)
			}
			done <- struct{}{}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	for range g {
		<-done
	}
}

// counterB is the value of an unlabelled counter on n's registry (0 when
// absent).
func counterB(b *testing.B, n *node.Node, name string) float64 {
	fams, err := n.Registry().Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
