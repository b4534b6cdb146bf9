package search

import (
	"slices"
	"testing"
	"unicode"

	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
)

// isCJK reports whether a term holds a character the cjk analyzer joins
// into bigrams.
func isCJK(term []byte) bool {
	for _, r := range string(term) {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
			return true
		}
	}
	return false
}

func terms(t *testing.T, name, text string, keep func([]byte) bool) []string {
	t.Helper()
	a := newMapping().AnalyzerNamed(name)
	if a == nil {
		t.Fatalf("no analyzer %q", name)
	}
	var out []string
	for _, tok := range a.Analyze([]byte(text)) {
		if keep(tok.Term) {
			out = append(out, string(tok.Term))
		}
	}
	return out
}

// TestAnalyzerMatchesEnAndCJK holds textAnalyzer's promise: every Latin
// token comes out as bleve's "en" analyzer makes it and every CJK token as
// its "cjk" analyzer does, so one pass finds what the two fields of
// mapping version 2 found.
func TestAnalyzerMatchesEnAndCJK(t *testing.T) {
	texts := []string{
		"I posted twice because my request timed out; retrying is idempotent.",
		"The agent's replies were stored, and the stores' answers replayed.",
		"再試行しても投稿は一つだけ保存されます。",
		"request_id を同じにして再試行すると replayed: true が返ります",
		"한국어 문장도 검색됩니다 and English words like searching",
		"Numbers 2026 and ids 3f1c-42, a an the of, running runs ran",
	}
	notCJK := func(b []byte) bool { return !isCJK(b) }
	for _, text := range texts {
		got := terms(t, textAnalyzer, text, func([]byte) bool { return true })
		want := append(terms(t, en.AnalyzerName, text, notCJK), terms(t, cjk.AnalyzerName, text, isCJK)...)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%q:\n got  %q\n want %q", text, got, want)
		}
	}
}

// TestAnalyzerFoldsWidth: full-width Latin letters (common in Japanese
// text) are found by ordinary ones, which mapping version 2 did not do.
func TestAnalyzerFoldsWidth(t *testing.T) {
	full := terms(t, textAnalyzer, "Ｒｅｔｒｙｉｎｇ ｐｏｓｔｓ", func([]byte) bool { return true })
	plain := terms(t, textAnalyzer, "retrying posts", func([]byte) bool { return true })
	if !slices.Equal(full, plain) || len(plain) != 2 {
		t.Fatalf("full-width %q, plain %q", full, plain)
	}
}
