package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clause is one part of a search query as written, before analysis: a
// word or a quoted phrase, maybe excluded, maybe a prefix. Its Text is
// literal text, the operators taken off; the analyzer makes terms of it
// the way it makes terms of stored text.
type Clause struct {
	// Text is the clause's text: never empty, and without whitespace
	// unless Phrase.
	Text string
	// Phrase: Text was written between double quotes; its words must be
	// adjacent and in order.
	Phrase bool
	// Prefix: the word was written with a trailing *, which Text does not
	// include; its last word matches the words that start with it. Never
	// set together with Phrase.
	Prefix bool
	// Exclude: the clause was written with a leading -; entries it
	// matches are left out.
	Exclude bool
}

// ParseQuery splits q into clauses. It never fails: text that is not an
// operator is literal text. The grammar, the one definition of it
// (docs/api.md and the OpenAPI document describe it for users):
//
//   - Clauses are separated by whitespace, except inside a phrase.
//   - A double quote (") at the start of a clause opens a phrase when
//     another double quote follows somewhere later in q; the phrase is
//     the text up to that next quote, whitespace included, and the clause
//     ends there (text right after the closing quote starts the next
//     clause). A quote with no closing one, or one inside a word, is
//     literal text. An empty phrase ("") is nothing.
//   - A minus (-) at the start of a clause excludes the clause when the
//     next character is a letter, a digit or a quote opening a phrase:
//     -word, -"some phrase". Otherwise it is literal text: "-" alone,
//     "--force", "- item".
//   - A word (not a phrase) that ends in an asterisk (*) after at least
//     one other character is a prefix: word*. An asterisk alone or inside
//     a word is literal text.
//   - Everything else is literal: a word is passed as written to the
//     analyzer, which splits "raft-boltdb" into raft and boltdb as it
//     splits stored text (search then wants them adjacent, as in a
//     phrase) and drops punctuation.
//
// The output is bounded by q: at most one clause per byte of q, and the
// clauses' texts together no longer than q.
func ParseQuery(q string) []Clause {
	var out []Clause
	i := 0
	for i < len(q) {
		r, n := utf8.DecodeRuneInString(q[i:])
		if unicode.IsSpace(r) {
			i += n
			continue
		}
		c := Clause{}
		start := i
		if r == '-' && i+n < len(q) {
			next, _ := utf8.DecodeRuneInString(q[i+n:])
			if unicode.IsLetter(next) || unicode.IsNumber(next) || (next == '"' && opensPhrase(q, i+n)) {
				c.Exclude = true
				start = i + n
			}
		}
		if q[start] == '"' && opensPhrase(q, start) {
			end := start + 1 + strings.IndexByte(q[start+1:], '"')
			c.Phrase = true
			c.Text = strings.TrimSpace(q[start+1 : end])
			i = end + 1
		} else {
			end := start
			for end < len(q) {
				r, n := utf8.DecodeRuneInString(q[end:])
				if unicode.IsSpace(r) {
					break
				}
				end += n
			}
			c.Text = q[start:end]
			if len(c.Text) > 1 && strings.HasSuffix(c.Text, "*") {
				c.Prefix = true
				c.Text = c.Text[:len(c.Text)-1]
			}
			i = end
		}
		if c.Text != "" {
			out = append(out, c)
		}
	}
	return out
}

// opensPhrase reports whether the quote at q[at] has a closing quote
// after it.
func opensPhrase(q string, at int) bool {
	return strings.IndexByte(q[at+1:], '"') >= 0
}
