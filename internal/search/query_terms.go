package search

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	unicodetok "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/restarea/restarea"
)

// prefixAnalyzer is textAnalyzer without its stop-word and stemming
// filters: a prefix is a piece of a word, so "the*" must not be dropped
// as a stop word (it finds "theory"), and it is matched against the
// stored terms in both its written and its stemmed form (prefixForms).
// It is built for queries only; the index's mapping does not hold it.
var prefixAnalyzer = func() analysis.Analyzer {
	im := mapping.NewIndexMapping()
	err := im.AddCustomAnalyzer("restarea_prefix", map[string]interface{}{
		"type":          custom.Name,
		"tokenizer":     unicodetok.Name,
		"token_filters": []interface{}{cjk.WidthName, en.PossessiveName, lowercase.Name, cjk.BigramName},
	})
	a := im.AnalyzerNamed("restarea_prefix")
	if err != nil || a == nil {
		panic(fmt.Sprintf("search: prefix analyzer: %v", err)) // a fixed definition: fails every test if it is wrong
	}
	return a
}()

var stemmer = porter.NewPorterStemmer()

// match is a clause as the index sees it: the terms textAnalyzer makes of
// it, at consecutive positions. A nil slot stands for a word the analyzer
// dropped inside a phrase (a stop word): any term matches there, as in
// stored text, whose positions keep the gap. A match of one slot is a
// word; of several, a phrase (a quoted one, or a word the analyzer split,
// like raft-boltdb).
type match struct {
	slots [][]string
	// prefix, when set, is the forms of a prefix (prefixForms): one more
	// slot after slots, holding the index's terms that start with any of
	// them once expanded.
	prefix []string
	// text is the clause as written, for messages.
	text string
}

// empty reports whether the analyzer left nothing of the clause (stop
// words or punctuation only): it matches nothing and is dropped.
func (m match) empty() bool { return len(m.slots) == 0 && len(m.prefix) == 0 }

// analyse makes a match of c with textAnalyzer, as stored text is
// analysed. A prefix's last word is analysed without stop words and
// stemming and must be at least restarea.MinSearchPrefixLen characters:
// a shorter one expands to a large part of the vocabulary.
func analyse(c Clause) (match, error) {
	m := match{text: c.Text}
	if !c.Prefix {
		m.slots = phraseSlots(analyzer.Analyze([]byte(c.Text)))
		return m, nil
	}
	toks := prefixAnalyzer.Analyze([]byte(c.Text))
	if len(toks) == 0 {
		return m, nil // "**" or ".*": punctuation only
	}
	last := toks[0]
	for _, t := range toks[1:] {
		if t.Start > last.Start {
			last = t
		}
	}
	p := string(last.Term)
	if strings.IndexFunc(p, isCJKRune) >= 0 {
		// CJK text is indexed as pairs of characters, found anywhere in a
		// word already: "再試*" is the word "再試", which finds "再試行".
		c.Prefix = false
		return analyse(c)
	}
	if utf8.RuneCountInString(p) < restarea.MinSearchPrefixLen {
		return m, restarea.Errorf(restarea.CodeInvalidRequest,
			"q has the prefix %s*, shorter than %d characters: a prefix needs at least %d characters before the * (or search for the whole word)",
			p, restarea.MinSearchPrefixLen, restarea.MinSearchPrefixLen)
	}
	head := analyzer.Analyze([]byte(c.Text[:last.Start]))
	m.slots = phraseSlots(head)
	if len(head) > 0 {
		// Stop words between the head and the prefix leave a gap, as
		// they do in stored text.
		end := head[0].Position
		for _, t := range head {
			end = max(end, t.Position)
		}
		for range min(max(last.Position-end-1, 0), len(toks)) {
			m.slots = append(m.slots, nil)
		}
	}
	m.prefix = prefixForms(p)
	return m, nil
}

// isCJKRune reports whether r is of a script textAnalyzer makes pairs of
// characters of.
func isCJKRune(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// prefixForms is the forms a prefix is matched in against the index's
// terms, which are stemmed (the index keeps no unstemmed form): the
// prefix as written, lowercased, and its stem when that differs, so that
// "retry*" finds "retrying", stored as "retri". A prefix that reaches
// into a word's ending the stemmer cuts ("postin*" for "posting", stored
// as "post") finds neither form; a shorter prefix does.
func prefixForms(p string) []string {
	s := stemmer.Filter(analysis.TokenStream{&analysis.Token{Term: []byte(p)}})
	if len(s) == 1 && string(s[0].Term) != p && len(s[0].Term) > 0 {
		return []string{p, string(s[0].Term)}
	}
	return []string{p}
}

// phraseSlots lays tokens out by position, from the first token's to the
// last's; a position no token holds is a nil slot.
func phraseSlots(toks analysis.TokenStream) [][]string {
	if len(toks) == 0 {
		return nil
	}
	first, last := toks[0].Position, toks[0].Position
	for _, t := range toks {
		first, last = min(first, t.Position), max(last, t.Position)
	}
	slots := make([][]string, last-first+1)
	for _, t := range toks {
		s := &slots[t.Position-first]
		if !slices.Contains(*s, string(t.Term)) {
			*s = append(*s, string(t.Term))
		}
	}
	return slots
}

// addTerms adds the terms of slots to set.
func addTerms(set map[string]struct{}, slots [][]string) {
	for _, s := range slots {
		for _, t := range s {
			set[t] = struct{}{}
		}
	}
}

// expand resolves plan's prefixes against the index: each prefix slot
// becomes the index's terms (title or body) that start with one of its
// forms. The query's distinct terms, prefixes expanded, stay within
// restarea.MaxSearchTerms, or it is refused naming q: a prefix costs what
// its terms cost. It returns the clauses as slots and the terms snippets
// mark (q's own and the expansions of prefixes to find). find is nil when
// a prefix to find expands to nothing: no entry matches.
func (x *Index) expand(plan Plan) (find, exclude [][][]string, marks map[string]struct{}, err error) {
	seen := map[string]struct{}{}
	for _, m := range plan.find {
		addTerms(seen, m.slots)
	}
	for _, m := range plan.exclude {
		addTerms(seen, m.slots)
	}
	marks = maps.Clone(plan.Terms)
	none := false
	err = x.withIndex(func(idx bleve.Index) error {
		resolve := func(m match) ([][]string, error) {
			if len(m.prefix) == 0 {
				return m.slots, nil
			}
			var terms []string
			for _, form := range m.prefix {
				for _, field := range []string{fTitle, fBody} {
					if err := prefixTerms(idx, field, form, func(t string) bool {
						if !slices.Contains(terms, t) {
							terms = append(terms, t)
						}
						seen[t] = struct{}{}
						return len(seen) <= restarea.MaxSearchTerms
					}); err != nil {
						return nil, err
					}
					if len(seen) > restarea.MaxSearchTerms {
						return nil, restarea.Errorf(restarea.CodeInvalidRequest,
							"q has the prefix %s*, which with the query's other terms matches more than %d distinct terms in this node's index: make the prefix longer, or search for whole words",
							m.prefix[0], restarea.MaxSearchTerms)
					}
				}
			}
			if len(terms) == 0 {
				return nil, nil
			}
			return append(slices.Clip(m.slots), terms), nil
		}
		for _, m := range plan.find {
			slots, err := resolve(m)
			if err != nil {
				return err
			}
			if slots == nil {
				none = true
				return nil
			}
			if len(m.prefix) > 0 {
				addTerms(marks, slots[len(slots)-1:])
			}
			find = append(find, slots)
		}
		for _, m := range plan.exclude {
			slots, err := resolve(m)
			if err != nil {
				return err
			}
			if slots != nil { // a prefix that expands to nothing excludes nothing
				exclude = append(exclude, slots)
			}
		}
		return nil
	})
	if err != nil || none {
		return nil, nil, nil, err
	}
	return find, exclude, marks, nil
}

// prefixTerms calls add with each term of field that starts with prefix,
// in order, until add returns false.
func prefixTerms(idx bleve.Index, field, prefix string, add func(string) bool) error {
	d, err := idx.FieldDictPrefix(field, []byte(prefix))
	if err != nil {
		return err
	}
	defer d.Close()
	for {
		e, err := d.Next()
		if err != nil || e == nil {
			return err
		}
		if !add(e.Term) {
			return nil
		}
	}
}
