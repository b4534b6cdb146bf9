package search

import (
	"github.com/blevesearch/bleve/v2/analysis"

	"github.com/restarea/restarea"
)

// analyzer is textAnalyzer itself, built from the same definition the
// index's mapping holds, for what a query needs outside bleve: counting
// its terms and finding them in the bodies of the page it returns.
var analyzer = func() analysis.Analyzer {
	a := newMapping().AnalyzerNamed(textAnalyzer)
	if a == nil {
		panic("search: no analyzer " + textAnalyzer) // a fixed definition: fails every test if it is wrong
	}
	return a
}()

// Plan is a query checked against its budget, ready to run.
type Plan struct {
	Query restarea.SearchQuery
	// Offset is the cursor's position in the ranked list.
	Offset int
	// Terms are q's distinct analysed terms (at most MaxSearchTerms).
	Terms map[string]struct{}
}

// Check validates q and bounds its cost before anything runs: the checks
// of restarea.SearchQuery.Validate, then at most restarea.MaxSearchTerms
// distinct terms in q, and a cursor short of restarea.MaxSearchDepth. Every
// refusal is CodeInvalidRequest naming the field (q or cursor). It reads
// nothing but q, so a node calls it before spending any of its search
// budget on the query.
func Check(q restarea.SearchQuery) (Plan, error) {
	q, err := q.Validate()
	if err != nil {
		return Plan{}, err
	}
	terms := queryTerms(q.Q)
	if len(terms) > restarea.MaxSearchTerms {
		return Plan{}, restarea.Errorf(restarea.CodeInvalidRequest,
			"q has more than %d distinct search terms: keep its most distinctive words (for find_my_post, a sentence or two of the body)",
			restarea.MaxSearchTerms)
	}
	from, err := decodeCursor(q.Cursor)
	if err != nil {
		return Plan{}, err
	}
	if from >= restarea.MaxSearchDepth {
		return Plan{}, restarea.Errorf(restarea.CodeInvalidRequest,
			"cursor is past result %d, the deepest a search pages to; refine the query instead (more words, type, actor or since)",
			restarea.MaxSearchDepth)
	}
	return Plan{Query: q, Offset: from, Terms: terms}, nil
}

// queryTerms returns the distinct terms textAnalyzer makes of s. It stops
// counting one past MaxSearchTerms: q is at most MaxSearchQueryLen
// characters, so the analysis itself is small.
func queryTerms(s string) map[string]struct{} {
	terms := map[string]struct{}{}
	for _, t := range analyzer.Analyze([]byte(s)) {
		terms[string(t.Term)] = struct{}{}
		if len(terms) > restarea.MaxSearchTerms {
			break
		}
	}
	return terms
}

// matchSpans returns the byte ranges of body whose analysed terms are
// among terms: the same ranges the index holds as term locations, found
// for the returned page's bodies only instead of for every hit scored.
func matchSpans(body string, terms map[string]struct{}) []span {
	if len(terms) == 0 {
		return nil
	}
	var out []span
	for _, t := range analyzer.Analyze([]byte(body)) {
		if _, ok := terms[string(t.Term)]; ok {
			out = append(out, span{t.Start, t.End})
		}
	}
	return out
}
