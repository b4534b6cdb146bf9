package restarea

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Limits of a search request.
const (
	MaxSearchQueryLen     = 500 // characters of q
	DefaultSearchLimit    = 20
	MaxSearchLimit        = 50
	SnippetMarkStart      = "«" // opens a matched term in SearchResult.Snippet
	SnippetMarkEnd        = "»" // closes it
	maxSearchActorNameLen = 200
)

// The cost budget of a search, checked before it runs (see package
// internal/search): a search's work grows with the terms it matches and
// with how deep in the ranked list its page lies, since every hit above
// the page is scored and kept while the query runs.
const (
	// MaxSearchTerms is how many distinct terms q may have once analysed
	// (after stemming, without stop words; a CJK text counts one term per
	// pair of characters).
	MaxSearchTerms = 32
	// MaxSearchDepth is the deepest a page reaches in the ranked list:
	// its cursor's offset plus its limit. Deeper results are for a more
	// precise query (more words, type, actor, since), not for paging.
	MaxSearchDepth = 1000
	// MinSearchPrefixLen is the fewest characters a prefix (word* in q)
	// may have before its *: a shorter one would expand to a large part
	// of the index's vocabulary. Its expansion counts against
	// MaxSearchTerms.
	MinSearchPrefixLen = 3
)

// SearchQuery is one full-text search of public entries.
type SearchQuery struct {
	// Q is the text searched for (1..MaxSearchQueryLen characters): words
	// an entry must all contain, "quoted phrases", prefix* and -exclusions
	// (the grammar: internal/search.ParseQuery, docs/api.md).
	Q string
	// Type, when set, is TypeQuestion or TypeReply.
	Type string
	// Actor, when set, keeps entries whose actor.name is exactly this.
	Actor string
	// Since, when not zero, keeps entries created at or after it.
	Since time.Time
	// Cursor is a next_cursor of a previous page of the same query.
	Cursor string
	// Limit is the page size; 0 means DefaultSearchLimit.
	Limit int
	// Source is the client the query counts against in the per-source
	// search limits: the address the adapter derived from the request
	// (after the trusted-proxy rule), never a parameter the client sent.
	// Queries with no source share one budget.
	Source string
}

// Validate checks q and fills the default limit. Errors name the field.
func (q SearchQuery) Validate() (SearchQuery, error) {
	q.Q = strings.TrimSpace(q.Q)
	switch n := utf8.RuneCountInString(q.Q); {
	case !utf8.ValidString(q.Q):
		return q, Errorf(CodeInvalidRequest, "q must be valid UTF-8")
	case n == 0:
		return q, Errorf(CodeInvalidRequest, "q is required: the text to search for")
	case n > MaxSearchQueryLen:
		return q, Errorf(CodeInvalidRequest, "q must be at most %d characters", MaxSearchQueryLen)
	}
	// Stored text is NFC (NormalizeText); a query in another form (an
	// "e" and a combining acute for "é") must find it.
	q.Q = norm.NFC.String(q.Q)
	switch q.Type {
	case "", TypeQuestion, TypeReply:
	default:
		return q, Errorf(CodeInvalidRequest, "type must be question or reply")
	}
	if !utf8.ValidString(q.Actor) || utf8.RuneCountInString(q.Actor) > maxSearchActorNameLen {
		return q, Errorf(CodeInvalidRequest, "actor must be an actor name of at most %d characters", maxSearchActorNameLen)
	}
	q.Actor = norm.NFC.String(q.Actor)
	switch {
	case q.Limit == 0:
		q.Limit = DefaultSearchLimit
	case q.Limit < 0 || q.Limit > MaxSearchLimit:
		return q, Errorf(CodeInvalidRequest, "limit must be between 1 and %d", MaxSearchLimit)
	}
	return q, nil
}

// ParseSearchSince reads the since parameter: an RFC 3339 time, or empty.
func ParseSearchSince(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, Errorf(CodeInvalidRequest, "since must be an RFC 3339 time, like 2026-01-02T15:04:05Z")
	}
	return t, nil
}

// ParseSearchLimit reads the limit parameter: empty (the default) or an
// integer in [1, MaxSearchLimit].
func ParseSearchLimit(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxSearchLimit {
		return 0, Errorf(CodeInvalidRequest, "limit must be an integer between 1 and %d", MaxSearchLimit)
	}
	return n, nil
}

// SnippetPart is a piece of a snippet; Match marks a piece the query
// matched.
type SnippetPart struct {
	Text  string
	Match bool
}

// SearchResult is one public entry that matched, with its score and a
// snippet of its body around the matches.
type SearchResult struct {
	Entry
	// Score orders results: higher is a better match.
	Score float64 `json:"score"`
	// Snippet is plain text from the body, each matched term between
	// SnippetMarkStart and SnippetMarkEnd.
	Snippet string `json:"snippet"`
	// Parts is the snippet in pieces, for pages that mark matches up.
	Parts []SnippetPart `json:"-"`
}

// SearchPage is one page of results, best first. NextCursor is nil on the
// last page.
type SearchPage struct {
	Results    []SearchResult `json:"results"`
	NextCursor *string        `json:"next_cursor"`
}

// SearchService searches public entries. Each node answers from its own
// index, derived from its applied state; hidden, deleted and expired
// entries never appear. A node whose index is being rebuilt answers
// CodeUnavailable with a retry delay.
type SearchService interface {
	Search(ctx context.Context, q SearchQuery) (SearchPage, error)
}

// JoinSnippet renders parts as plain text with markers around matches.
func JoinSnippet(parts []SnippetPart) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Match {
			b.WriteString(SnippetMarkStart)
			b.WriteString(p.Text)
			b.WriteString(SnippetMarkEnd)
			continue
		}
		b.WriteString(p.Text)
	}
	return b.String()
}
