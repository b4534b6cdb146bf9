package chaos

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/restarea/restarea"
)

// Bounds of reading the final state.
const (
	maxEntryPages = 100_000
	readAttempts  = 5
	readParallel  = 16
	// nodeDownAfter is how many reads in a row a node may leave
	// unanswered (each after readAttempts tries) before readAll stops
	// asking it.
	nodeDownAfter = 32
	// maxPolls bounds every polling loop by count; their contexts bound
	// them by time, which is what normally ends them.
	maxPolls = 100_000
)

// settle waits until every node answers, all agree on one leader, and
// each has applied everything the leader has committed; it reports what
// was still missing when ctx ended.
func settle(ctx context.Context, hc *http.Client, urls []string) error {
	last := "not asked"
	for range maxPolls {
		sts := statusAll(ctx, hc, urls, 2*time.Second)
		if last = settledProblem(sts); last == "" {
			return nil
		}
		if !sleep(ctx, 200*time.Millisecond) {
			break
		}
	}
	return fmt.Errorf("cluster did not settle: %s", last)
}

// settledProblem returns "" when sts show a settled cluster, else what is
// wrong.
func settledProblem(sts []*restarea.ClusterStatus) string {
	v := leaderOf(sts)
	if v.ID == "" {
		return "no leader"
	}
	var commit uint64
	for i, st := range sts {
		if st == nil {
			return fmt.Sprintf("node %d does not answer", i)
		}
		if st.NodeID == v.ID {
			commit = st.CommitIndex
		}
	}
	for i, st := range sts {
		if st.LeaderID != v.ID {
			return fmt.Sprintf("node %d sees leader %q, others %q", i, st.LeaderID, v.ID)
		}
		if st.AppliedIndex < commit {
			return fmt.Sprintf("node %d applied %d of %d", i, st.AppliedIndex, commit)
		}
	}
	return ""
}

// nodeEntries is what one node stores, by request_id (several entries
// for one request_id are a duplicate).
type nodeEntries map[string][]restarea.Entry

// readEntries lists every entry node u stores through the admin API.
func readEntries(ctx context.Context, hc *http.Client, u, token string) (nodeEntries, error) {
	out := nodeEntries{}
	cursor := ""
	for range maxEntryPages {
		q := url.Values{"limit": {"200"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page restarea.EntryPage
		var err error
		for try := range readAttempts {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = getData(cctx, hc, u+"/api/v1/admin/entries?"+q.Encode(), token, &page)
			cancel()
			if err == nil || !sleep(ctx, time.Duration(try+1)*200*time.Millisecond) {
				break
			}
		}
		if err != nil {
			return nil, err
		}
		for _, e := range page.Entries {
			out[e.RequestID] = append(out[e.RequestID], e)
		}
		if page.NextCursor == nil || *page.NextCursor == "" {
			return out, nil
		}
		cursor = *page.NextCursor
	}
	return nil, fmt.Errorf("%s: more than %d pages of entries", u, maxEntryPages)
}

// readable is one public read of an acknowledged entry after settling.
type readable struct {
	node    int
	rid, id string
	outcome string
	err     string
}

// readAll reads every entry of acked through the public API of every
// node (REST, local consistency) and returns the reads that did not find
// it. 5xx answers and transport errors are retried a few times. A node
// whose last nodeDownAfter reads all ended without an answer is taken for
// down: its remaining reads are reported missing at once instead of each
// being retried, so a run whose nodes died is checked in seconds, not in
// hours of retries.
func readAll(ctx context.Context, hc *http.Client, urls []string, acked map[string]ackedEntry) []readable {
	type job struct {
		node int
		rid  string
		e    ackedEntry
	}
	jobs := make(chan job)
	var mu sync.Mutex
	var missing []readable
	silent := make([]int, len(urls)) // consecutive reads without an answer, under mu
	var wg sync.WaitGroup
	for range readParallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				mu.Lock()
				down := silent[j.node] >= nodeDownAfter
				mu.Unlock()
				var a answer
				if down {
					a = answer{outcome: OutcomeFailed, err: fmt.Sprintf("not read: the node did not answer its last %d reads", nodeDownAfter)}
				} else {
					for try := range readAttempts {
						cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
						a = restRead(cctx, hc, urls[j.node], j.e.typ, j.e.id, false)
						cancel()
						if Known(a.outcome) || !sleep(ctx, time.Duration(try+1)*200*time.Millisecond) {
							break
						}
					}
				}
				mu.Lock()
				switch {
				case down:
				case Known(a.outcome):
					silent[j.node] = 0
				default:
					silent[j.node]++
				}
				if a.outcome != OutcomeFound || a.entryID != j.e.id {
					missing = append(missing, readable{node: j.node, rid: j.rid, id: j.e.id, outcome: a.outcome, err: a.err})
				}
				mu.Unlock()
			}
		}()
	}
	for rid, e := range acked {
		for n := range urls {
			select {
			case jobs <- job{n, rid, e}:
			case <-ctx.Done():
			}
		}
	}
	close(jobs)
	wg.Wait()
	return missing
}
