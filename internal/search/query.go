package search

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/restarea/restarea"
)

// Query bounds. A page is filled from hits checked against the state; hits
// the state no longer shows are skipped, and one query reads at most
// maxScan hits, so a page of a query whose hits are mostly hidden can be
// short (its cursor still goes on).
const (
	maxScan   = 1000
	maxOffset = 10000
	// freshWait is how long a query waits for the index to reach the
	// state applied when it arrived, so that an agent that just posted
	// finds its post.
	freshWait = time.Second
	// rebuildRetry is the retry delay a query gets while the index is
	// being rebuilt.
	rebuildRetry = 5 * time.Second
)

// Search runs q over the public entries. Results are ranked by relevance
// (ties: newest first), each checked against the state as it is now.
func (x *Index) Search(ctx context.Context, q restarea.SearchQuery) (restarea.SearchPage, error) {
	start := time.Now()
	defer func() { x.met.query.Observe(time.Since(start).Seconds()) }()
	page := restarea.SearchPage{Results: []restarea.SearchResult{}}
	q, err := q.Validate()
	if err != nil {
		return page, err
	}
	from, err := decodeCursor(q.Cursor)
	if err != nil {
		return page, err
	}
	if x.Rebuilding() {
		return page, restarea.Errorf(restarea.CodeUnavailable,
			"the search index of this node is being rebuilt from its state (%d of %d log entries done); retry shortly",
			x.watermark.Load(), x.cfg.State.AppliedIndex()).WithRetryAfter(rebuildRetry)
	}
	x.waitFresh(ctx, x.cfg.State.AppliedIndex())

	bq := buildQuery(q)
	scanned := 0
	for len(page.Results) < q.Limit && scanned < maxScan {
		size := min(2*(q.Limit-len(page.Results))+10, maxScan-scanned)
		var res *bleve.SearchResult
		err := x.withIndex(func(idx bleve.Index) error {
			req := bleve.NewSearchRequestOptions(bq, size, from, false)
			// Ties newest first (ids are UUIDv7): without a tie-break,
			// offsets over equal scores are not stable between pages.
			req.SortBy([]string{"-_score", "-_id"})
			req.IncludeLocations = true
			var err error
			res, err = idx.SearchInContext(ctx, req)
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				return page, restarea.Errorf(restarea.CodeUnavailable, "search cancelled: %v", ctx.Err())
			}
			return page, restarea.Errorf(restarea.CodeInternal, "search failed: %v", err)
		}
		if len(res.Hits) == 0 {
			return page, nil
		}
		ids := make([]string, len(res.Hits))
		for i, h := range res.Hits {
			ids[i] = h.ID
		}
		live, err := x.cfg.State.PublicEntries(ids)
		if err != nil {
			return page, err
		}
		var gone []string
		for i, h := range res.Hits {
			e, ok := live[h.ID]
			if !ok {
				gone = append(gone, h.ID)
				continue
			}
			if !matchesFilters(e, q) {
				continue
			}
			parts := snippet(e.Body, bodySpans(h.Locations, len(e.Body)))
			page.Results = append(page.Results, restarea.SearchResult{
				Entry: e, Score: h.Score, Parts: parts, Snippet: restarea.JoinSnippet(parts),
			})
			if len(page.Results) == q.Limit {
				if next := from + i + 1; uint64(next) < res.Total && next <= maxOffset {
					page.NextCursor = encodeCursor(next)
				}
				x.forget(gone) // the indexer removes those deleted, keeps the hidden
				return page, nil
			}
		}
		x.forget(gone) // the indexer removes those deleted, keeps the hidden
		from += len(res.Hits)
		scanned += len(res.Hits)
		if uint64(from) >= res.Total {
			return page, nil
		}
	}
	if from <= maxOffset {
		page.NextCursor = encodeCursor(from)
	}
	return page, nil
}

// waitFresh waits, at most freshWait, until the index has caught up with
// the applied index target.
func (x *Index) waitFresh(ctx context.Context, target uint64) {
	deadline := time.NewTimer(freshWait)
	defer deadline.Stop()
	for x.watermark.Load() < target {
		select {
		case x.hurry <- struct{}{}:
		default:
		}
		x.progressMu.Lock()
		ch := x.progress
		x.progressMu.Unlock()
		if x.watermark.Load() >= target {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// matchesFilters re-checks the filters against the entry as stored (the
// index already applied them; this guards the result against any
// disagreement).
func matchesFilters(e restarea.Entry, q restarea.SearchQuery) bool {
	return (q.Type == "" || e.Type == q.Type) &&
		(q.Actor == "" || e.Actor.Name == q.Actor) &&
		(q.Since.IsZero() || !e.CreatedAt.Before(q.Since))
}

// buildQuery matches q.Q against title and body (textAnalyzer: stemmed,
// and CJK as bigrams), with a bonus for the exact phrase (find_my_post searches by
// the exact body), then applies the filters.
func buildQuery(q restarea.SearchQuery) query.Query {
	var text []query.Query
	// The analyzer is named on each query, as the fields' mapping names it:
	// a query on a field without one would use the index's default.
	for _, f := range []struct {
		field string
		boost float64
	}{{fTitle, 2}, {fBody, 1}} {
		m := bleve.NewMatchQuery(q.Q)
		m.SetField(f.field)
		m.Analyzer = textAnalyzer
		m.SetBoost(f.boost)
		text = append(text, m)
		if f.field == fBody {
			p := bleve.NewMatchPhraseQuery(q.Q)
			p.SetField(f.field)
			p.Analyzer = textAnalyzer
			p.SetBoost(3)
			text = append(text, p)
		}
	}
	must := []query.Query{bleve.NewDisjunctionQuery(text...)}
	if q.Type != "" {
		t := bleve.NewTermQuery(q.Type)
		t.SetField(fType)
		must = append(must, t)
	}
	if q.Actor != "" {
		t := bleve.NewTermQuery(q.Actor)
		t.SetField(fActor)
		must = append(must, t)
	}
	if !q.Since.IsZero() {
		inclusive := true
		d := bleve.NewDateRangeInclusiveQuery(q.Since, time.Time{}, &inclusive, nil)
		d.SetField(fCreated)
		must = append(must, d)
	}
	if len(must) == 1 {
		return must[0]
	}
	return bleve.NewConjunctionQuery(must...)
}

// A cursor is the opaque form of the offset of the next hit in the ranked
// list of the same query. Ranking can shift while entries are indexed, so
// a later page may repeat or skip a result; ranked lists have no stable
// position, unlike the sequence-numbered cursors of the other reads.
func encodeCursor(offset int) *string {
	s := base64.RawURLEncoding.EncodeToString([]byte("o" + strconv.Itoa(offset)))
	return &s
}

func decodeCursor(c string) (int, error) {
	if c == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	s, ok := strings.CutPrefix(string(b), "o")
	n, aerr := strconv.Atoi(s)
	if err != nil || !ok || aerr != nil || n < 0 || n > maxOffset {
		return 0, restarea.Errorf(restarea.CodeInvalidRequest, "cursor is not valid; pass next_cursor from a previous page of the same search")
	}
	return n, nil
}
