package web

import (
	"html/template"
	"net/http"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
)

// searchPage is the search results page, with the same layout as the
// others. It is embedded, so a parse failure is a build defect.
var searchPage = template.Must(template.Must(
	template.New("layout.html").Funcs(templateFuncs).ParseFS(templateFiles, "templates/layout.html")).
	ParseFS(templateFiles, "templates/search.html"))

// searchResult is one result as the page shows it.
type searchResult struct {
	Entry restarea.Entry
	Link  string
	Parts []restarea.SnippetPart
}

type searchData struct {
	frame
	Q       string
	Results []searchResult
	Paged   bool
	Next    string
}

// search is GET /search?q=&cursor=: results rendered on the server (no
// script), matched terms marked with <mark>; html/template escapes every
// piece, so entry text is always shown as text.
func (s *site) search(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	d := searchData{frame: frame{Title: "Search"}, Q: v.Get("q")}
	if d.Q == "" {
		s.servePage(w, r, searchPage, d)
		return
	}
	if s.searcher == nil {
		s.errorPage(w, r, http.StatusNotFound, 0, "")
		return
	}
	cursor := v.Get("cursor")
	if len(cursor) > maxCursorSize {
		s.errorPage(w, r, http.StatusBadRequest, 0, "cursor is too long")
		return
	}
	q, err := restarea.SearchQuery{Q: d.Q, Cursor: cursor}.Validate()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q.Source = httpx.SourceOf(r, s.proxies, s.v6bits) // the search limits count by it
	page, err := s.searcher.Search(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.Title = "Search: " + restarea.ShowInvisible(restarea.DisplayText(q.Q))
	d.Paged = cursor != ""
	for _, res := range page.Results {
		e := onPage(res.Entry)
		link := "/threads/" + e.ID
		if e.Type == restarea.TypeReply {
			link = "/replies/" + e.ID
		}
		parts := make([]restarea.SnippetPart, len(res.Parts))
		for i, p := range res.Parts {
			parts[i] = restarea.SnippetPart{Text: restarea.ShowInvisible(restarea.DisplayText(p.Text)), Match: p.Match}
		}
		d.Results = append(d.Results, searchResult{Entry: e, Link: link, Parts: parts})
	}
	if page.NextCursor != nil {
		d.Next = *page.NextCursor
	}
	s.servePage(w, r, searchPage, d)
}
