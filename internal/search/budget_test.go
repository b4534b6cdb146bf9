package search

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// words returns n distinct words that the analyzer keeps as n terms.
func words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = "zq" + strconv.Itoa(i) + "x"
	}
	return strings.Join(w, " ")
}

// A query's cost is bounded before it runs: more than MaxSearchTerms
// distinct analysed terms, or a cursor at MaxSearchDepth or deeper, is
// refused with invalid_request naming the field. Stop words and repeats
// do not count; CJK text counts one term per pair of characters.
func TestCheckBudget(t *testing.T) {
	for _, tt := range []struct {
		name  string
		q     restarea.SearchQuery
		field string // "" → accepted
	}{
		{"the most terms", restarea.SearchQuery{Q: words(restarea.MaxSearchTerms)}, ""},
		{"one term too many", restarea.SearchQuery{Q: words(restarea.MaxSearchTerms + 1)}, "q"},
		{"the finding's 80 words", restarea.SearchQuery{Q: words(80)}, "q"},
		{"repeats count once", restarea.SearchQuery{Q: strings.Repeat("timeout retry ", 30)}, ""},
		{"stop words do not count", restarea.SearchQuery{Q: words(restarea.MaxSearchTerms) + strings.Repeat(" the of and a", 20)}, ""},
		{"stems count once", restarea.SearchQuery{Q: words(restarea.MaxSearchTerms-1) + " posting posted posts"}, ""},
		{"CJK bigrams", restarea.SearchQuery{Q: "再試行の後に同じ内容を送りました。タイムアウトの後に接続が切れたので索引を再構築します。検索の結果"}, "q"},
		{"the deepest cursor", restarea.SearchQuery{Q: "a", Cursor: *encodeCursor(restarea.MaxSearchDepth - 1)}, ""},
		{"a cursor at the depth", restarea.SearchQuery{Q: "a", Cursor: *encodeCursor(restarea.MaxSearchDepth)}, "cursor"},
		{"the finding's cursor", restarea.SearchQuery{Q: "a", Cursor: *encodeCursor(10000), Limit: 50}, "cursor"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Check(tt.q)
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.field != "" && (restarea.ErrorCode(err) != restarea.CodeInvalidRequest || !strings.HasPrefix(restarea.ErrorMessage(err), tt.field+" ")):
				t.Fatalf("got %v, want invalid_request naming %s", err, tt.field)
			}
		})
	}
}

// Paging stops at MaxSearchDepth: the page that reaches it is cut there
// and has no next cursor, so a query matching more entries than that
// returns exactly MaxSearchDepth of them over its pages.
func TestPagingStopsAtDepth(t *testing.T) {
	b := newBoard(t)
	n := restarea.MaxSearchDepth + 30
	for i := 0; i < n; i += 100 {
		cmds := make([]fsm.Command, 0, 100)
		for j := i; j < min(n, i+100); j++ {
			cmds = append(cmds, postCommand(b.request(restarea.TypeQuestion, "", "question "+strconv.Itoa(j), "a timeout happened", "a")))
		}
		b.apply(cmds...)
	}
	b.waitIndexed()
	q := restarea.SearchQuery{Q: "timeout", Limit: 30, Cursor: *encodeCursor(restarea.MaxSearchDepth - 40)}
	seen := 0
	for pages := 0; ; pages++ {
		p := b.search(q)
		seen += len(p.Results)
		if p.NextCursor == nil {
			break
		}
		q.Cursor = *p.NextCursor
		if pages > 2 {
			t.Fatal("paging goes on past the depth")
		}
	}
	if seen != 40 {
		t.Fatalf("%d results from offset %d, want 40 (up to the depth %d)", seen, restarea.MaxSearchDepth-40, restarea.MaxSearchDepth)
	}
	if _, err := b.x.Search(context.Background(), restarea.SearchQuery{Q: "timeout", Cursor: *encodeCursor(restarea.MaxSearchDepth)}); restarea.ErrorCode(err) != restarea.CodeInvalidRequest {
		t.Fatalf("a cursor at the depth: %v", err)
	}
}

// Snippets mark the query's terms in the returned bodies, found by the
// index's own analyzer: stems and CJK bigrams alike.
func TestSnippetOfPageOnly(t *testing.T) {
	b := newBoard(t)
	b.question("Retries", "I posted it twice after a timeout.", "a")
	b.question("再試行", "タイムアウトの後に再試行しました。", "a")
	b.waitIndexed()
	if p := b.search(restarea.SearchQuery{Q: "posting timeouts"}); len(p.Results) != 1 || p.Results[0].Snippet != "I «posted» it twice after a «timeout»." {
		t.Fatalf("snippet: %+v", p.Results)
	}
	if p := b.search(restarea.SearchQuery{Q: "再試行"}); len(p.Results) != 1 || p.Results[0].Snippet != "タイムアウトの後に«再試行»しました。" {
		t.Fatalf("CJK snippet: %+v", p.Results)
	}
	if p := b.search(restarea.SearchQuery{Q: "the of"}); len(p.Results) != 0 || p.NextCursor != nil {
		t.Fatalf("stop words only: %+v", p)
	}
}
