package search

import (
	"strings"

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
	// Terms are the distinct analysed terms of q's words and phrases to
	// find (not of those excluded): what snippets mark. Prefixes add the
	// terms they expand to when the query runs.
	Terms map[string]struct{}
	// find are the clauses an entry must match, all of them; exclude the
	// clauses it must match none of. Clauses the analyzer left nothing
	// of are not there.
	find, exclude []match
	// bonus is the text of q's words and phrases (not prefixes or
	// exclusions) as one phrase: a body holding it ranks first (the
	// exact body of find_my_post).
	bonus [][]string
}

// Check validates q and bounds its cost before anything runs: the checks
// of restarea.SearchQuery.Validate, then q's grammar (ParseQuery) and
// analysis, at most restarea.MaxSearchTerms distinct terms in q (a prefix
// counting one here, and what it expands to when the query runs), and a
// cursor short of restarea.MaxSearchDepth. Every refusal is
// CodeInvalidRequest naming the field (q or cursor): a prefix shorter
// than restarea.MinSearchPrefixLen, or a q of exclusions only, is
// refused. It reads nothing but q, so a node calls it before spending any
// of its search budget on the query.
func Check(q restarea.SearchQuery) (Plan, error) {
	q, err := q.Validate()
	if err != nil {
		return Plan{}, err
	}
	plan := Plan{Query: q, Terms: map[string]struct{}{}}
	all := map[string]struct{}{}
	forms := map[string]struct{}{}
	excluded := false
	var bonus []string
	for _, c := range ParseQuery(q.Q) {
		m, err := analyse(c)
		if err != nil {
			return Plan{}, err
		}
		excluded = excluded || c.Exclude
		if !c.Exclude && !c.Prefix {
			// Stop words too: they keep their gap in the phrase.
			bonus = append(bonus, c.Text)
		}
		if m.empty() {
			continue
		}
		addTerms(all, m.slots)
		for _, f := range m.prefix {
			forms[f] = struct{}{}
		}
		if len(all)+len(forms) > restarea.MaxSearchTerms {
			return Plan{}, restarea.Errorf(restarea.CodeInvalidRequest,
				"q has more than %d distinct search terms: keep its most distinctive words (for find_my_post, a sentence or two of the body)",
				restarea.MaxSearchTerms)
		}
		if c.Exclude {
			plan.exclude = append(plan.exclude, m)
			continue
		}
		plan.find = append(plan.find, m)
		addTerms(plan.Terms, m.slots)
	}
	if excluded && len(plan.find) == 0 {
		return Plan{}, restarea.Errorf(restarea.CodeInvalidRequest,
			"q has nothing to search for besides its exclusions (-word or -\"phrase\"): add a word or phrase the entries must contain")
	}
	plan.bonus = phraseSlots(analyzer.Analyze([]byte(strings.Join(bonus, " "))))
	from, err := decodeCursor(q.Cursor)
	if err != nil {
		return Plan{}, err
	}
	if from >= restarea.MaxSearchDepth {
		return Plan{}, restarea.Errorf(restarea.CodeInvalidRequest,
			"cursor is past result %d, the deepest a search pages to; refine the query instead (more words, type, actor or since)",
			restarea.MaxSearchDepth)
	}
	plan.Offset = from
	return plan, nil
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
