package search

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/restarea/restarea"
)

// Query bounds. A page is filled from hits checked against the state; hits
// the state no longer shows are skipped. A query reads hits in rounds,
// each asking bleve for a window at most four times the previous one, and
// never past restarea.MaxSearchDepth: bleve scores every match and keeps
// the best offset+size of them while it runs, so the depth bounds what one
// round holds, and the growth bounds the rounds (about four). A page of a
// query whose hits are mostly hidden can be short; its cursor goes on.
const (
	// checkBatch is how many hits one read of the state checks: entries
	// are read whole (bodies of up to restarea.MaxBody characters), so a
	// round of a thousand hits is checked in slices of this many, and
	// stops once the page is full.
	checkBatch = 64
	// maxQueryTime bounds one query's run in the index, whatever its
	// terms: past it the query is stopped (bleve checks its context while
	// it collects) and answered 503 with a retry delay. It is the
	// backstop of the term and depth bounds, which keep every query
	// measured far below it.
	maxQueryTime = time.Second
	// freshWait is how long a query waits for the index to reach the
	// state applied when it arrived, so that an agent that just posted
	// finds its post.
	freshWait = time.Second
	// rebuildRetry is the retry delay a query gets while the index is
	// being rebuilt.
	rebuildRetry = 5 * time.Second
)

// Search runs q over the public entries. Results are ranked by relevance
// (ties: newest first), each checked against the state as it is now. q is
// checked first (Check); the terms of only the returned page's bodies are
// located for snippets.
func (x *Index) Search(ctx context.Context, q restarea.SearchQuery) (restarea.SearchPage, error) {
	start := time.Now()
	defer func() { x.met.query.Observe(time.Since(start).Seconds()) }()
	page := restarea.SearchPage{Results: []restarea.SearchResult{}}
	plan, err := Check(q)
	if err != nil {
		return page, err
	}
	q, from := plan.Query, plan.Offset
	if x.Rebuilding() {
		return page, restarea.Errorf(restarea.CodeUnavailable,
			"the search index of this node is being rebuilt from its state (%d of %d log entries done); retry shortly",
			x.watermark.Load(), x.cfg.State.AppliedIndex()).WithRetryAfter(rebuildRetry)
	}
	x.waitFresh(ctx, x.cfg.State.AppliedIndex())
	if len(plan.find) == 0 {
		return page, nil // stop words only: nothing in the index matches
	}
	find, exclude, marks, err := x.expand(plan)
	switch {
	case restarea.ErrorCode(err) == restarea.CodeInvalidRequest:
		return page, err
	case err != nil:
		return page, searchFailed(ctx, err)
	case find == nil:
		return page, nil // a prefix an entry must match expands to nothing
	}
	plan.Terms = marks
	ctx, cancel := context.WithTimeout(ctx, maxQueryTime)
	defer cancel()

	bq := buildQuery(q, find, exclude, plan.bonus)
	size := 0
	for len(page.Results) < q.Limit && from < restarea.MaxSearchDepth {
		size = min(max(2*(q.Limit-len(page.Results))+10, 4*size), restarea.MaxSearchDepth-from)
		var res *bleve.SearchResult
		err := x.withIndex(func(idx bleve.Index) error {
			// No locations: bleve would compute and keep them for every
			// hit it scores, offset+size of them held at once; snippets
			// locate the terms in the page's own bodies instead.
			req := bleve.NewSearchRequestOptions(bq, size, from, false)
			// Ties newest first (ids are UUIDv7): without a tie-break,
			// offsets over equal scores are not stable between pages.
			req.SortBy([]string{"-_score", "-_id"})
			var err error
			res, err = idx.SearchInContext(ctx, req)
			return err
		})
		if err != nil {
			return page, searchFailed(ctx, err)
		}
		if len(res.Hits) == 0 {
			return page, nil
		}
		next, full, err := x.fill(&page, plan, res.Hits, from)
		if err != nil {
			return page, err
		}
		if full {
			if uint64(next) < res.Total && next < restarea.MaxSearchDepth {
				page.NextCursor = encodeCursor(next)
			}
			return page, nil
		}
		from += len(res.Hits)
		if uint64(from) >= res.Total {
			return page, nil
		}
	}
	if from < restarea.MaxSearchDepth {
		page.NextCursor = encodeCursor(from)
	}
	return page, nil
}

// fill adds to page the hits the state shows and the filters keep, in
// order, reading the state checkBatch hits at a time, until the page is
// full. It returns the offset after the last hit used and whether the
// page is full.
func (x *Index) fill(page *restarea.SearchPage, plan Plan, hits search.DocumentMatchCollection, from int) (int, bool, error) {
	q := plan.Query
	for lo := 0; lo < len(hits); lo += checkBatch {
		batch := hits[lo:min(lo+checkBatch, len(hits))]
		ids := make([]string, len(batch))
		for i, h := range batch {
			ids[i] = h.ID
		}
		live, err := x.cfg.State.PublicEntries(ids)
		if err != nil {
			return 0, false, err
		}
		var gone []string
		for i, h := range batch {
			e, ok := live[h.ID]
			if !ok {
				gone = append(gone, h.ID)
				continue
			}
			if !matchesFilters(e, q) {
				continue
			}
			parts := snippet(e.Body, mergeSpans(matchSpans(e.Body, plan.Terms)))
			page.Results = append(page.Results, restarea.SearchResult{
				Entry: e, Score: h.Score, Parts: parts, Snippet: restarea.JoinSnippet(parts),
			})
			if len(page.Results) == q.Limit {
				x.forget(gone) // the indexer removes those deleted, keeps the hidden
				return from + lo + i + 1, true, nil
			}
		}
		x.forget(gone)
	}
	return from + len(hits), false, nil
}

// searchFailed turns a failed bleve search into the answer: cancelled by
// the client, stopped at maxQueryTime, or an internal failure.
func searchFailed(ctx context.Context, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return restarea.Errorf(restarea.CodeUnavailable,
			"the search took longer than %v on this node and was stopped; retry, or narrow the query (fewer common words, type, actor or since)",
			maxQueryTime).WithRetryAfter(time.Second)
	case ctx.Err() != nil:
		return restarea.Errorf(restarea.CodeUnavailable, "search cancelled: %v", ctx.Err())
	}
	return restarea.Errorf(restarea.CodeInternal, "search failed: %v", err)
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

// buildQuery finds the entries that match every clause of find, each in
// the title (boost 2) or the body, and none of exclude, with a bonus
// (boost 3) for a body that holds bonus, the query's words as one phrase
// (find_my_post searches by the exact body), then applies the filters.
// Clauses are analysed already (textAnalyzer: stemmed, CJK as bigrams),
// so the queries are built of terms; the index's fields hold the same.
// Scores are bleve's TF-IDF, the clauses' summed.
func buildQuery(q restarea.SearchQuery, find, exclude [][][]string, bonus [][]string) query.Query {
	var must, mustNot []query.Query
	body := 1.0
	if len(find) == 1 && slices.EqualFunc(find[0], bonus, slices.Equal) {
		// One word or phrase: the bonus is the clause itself. Its body
		// match carries the bonus's weight rather than being run twice
		// (a phrase's positions are read once per phrase query: twice
		// cost a single phrase about two thirds more).
		body, bonus = 1+3, nil
	}
	for _, slots := range find {
		must = append(must, bleve.NewDisjunctionQuery(fieldQuery(slots, fTitle, 2), fieldQuery(slots, fBody, body)))
	}
	for _, slots := range exclude {
		mustNot = append(mustNot, fieldQuery(slots, fTitle, 1), fieldQuery(slots, fBody, 1))
	}
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
	b := bleve.NewBooleanQuery()
	b.AddMust(must...)
	if len(bonus) > 0 {
		b.AddShould(fieldQuery(bonus, fBody, 3))
	}
	b.AddMustNot(mustNot...)
	return b
}

// fieldQuery matches slots in field: one term, any of a prefix's terms,
// or a phrase (terms at consecutive positions, a nil slot matching any).
func fieldQuery(slots [][]string, field string, boost float64) query.Query {
	if len(slots) == 1 {
		var any []query.Query
		for _, term := range slots[0] {
			t := bleve.NewTermQuery(term)
			t.SetField(field)
			t.SetBoost(boost)
			any = append(any, t)
		}
		if len(any) == 1 {
			return any[0]
		}
		return bleve.NewDisjunctionQuery(any...)
	}
	p := query.NewMultiPhraseQuery(slots, field)
	p.SetBoost(boost)
	return p
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
	if err != nil || !ok || aerr != nil || n < 0 {
		return 0, restarea.Errorf(restarea.CodeInvalidRequest, "cursor is not valid; pass next_cursor from a previous page of the same search")
	}
	return n, nil
}
