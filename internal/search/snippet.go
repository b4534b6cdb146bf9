package search

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/restarea/restarea"
)

// Snippet sizes, in bytes of the body.
const (
	snippetBefore = 60  // context kept before the first match
	snippetLen    = 240 // the whole window
)

type span struct{ start, end int }

// mergeSpans sorts spans and merges those that overlap (CJK bigrams do).
func mergeSpans(out []span) []span {
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	merged := out[:0]
	for _, s := range out {
		if k := len(merged) - 1; k >= 0 && s.start <= merged[k].end {
			merged[k].end = max(merged[k].end, s.end)
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// snippet cuts a window of body around the first match and splits it into
// plain and matched parts; whitespace runs become one space. With no match
// in the body (the title matched) it is the start of the body.
func snippet(body string, spans []span) []restarea.SnippetPart {
	from := 0
	if len(spans) > 0 {
		from = max(0, spans[0].start-snippetBefore)
	}
	to := min(len(body), from+snippetLen)
	for from > 0 && !utf8.RuneStart(body[from]) {
		from++
	}
	for to < len(body) && !utf8.RuneStart(body[to]) {
		to--
	}
	var parts []restarea.SnippetPart
	add := func(s string, match bool) {
		if s = collapseSpace(s); s != "" {
			parts = append(parts, restarea.SnippetPart{Text: s, Match: match})
		}
	}
	if from > 0 {
		add("…", false)
	}
	pos := from
	for _, s := range spans {
		if s.start < pos || s.end > to {
			continue
		}
		add(body[pos:s.start], false)
		add(body[s.start:s.end], true)
		pos = s.end
	}
	add(body[pos:to], false)
	if to < len(body) {
		add("…", false)
	}
	return parts
}

// collapseSpace turns each run of whitespace into one space.
func collapseSpace(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}
