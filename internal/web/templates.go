package web

import (
	"bytes"
	"embed"
	"html/template"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/mdtext"
)

//go:embed templates/*.html
var templateFiles embed.FS

// pages holds one parsed template per page, each the layout plus the
// page's "content". html/template escapes every value by its context, so
// entry text is always shown as text.
type pages struct {
	home, thread, reply, guide, errorPage *template.Template
}

var templateFuncs = template.FuncMap{
	"asset":   assetURL,
	"when":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	"iso":     func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"mode":    modeLabel,
	"excerpt": excerpt,
	"body":    renderBody,
	"inc":     func(i int) int { return i + 1 },
	"add":     func(a, b int) int { return a + b },
}

// mustParsePages parses the embedded templates. They are part of the
// binary, so a failure is a build defect that every test exposes, not a
// runtime condition.
func mustParsePages() pages {
	base := template.Must(template.New("layout.html").Funcs(templateFuncs).ParseFS(templateFiles, "templates/layout.html"))
	page := func(name string) *template.Template {
		return template.Must(template.Must(base.Clone()).ParseFS(templateFiles, "templates/"+name))
	}
	return pages{
		home:      page("home.html"),
		thread:    page("thread.html"),
		reply:     page("reply.html"),
		guide:     page("guide.html"),
		errorPage: page("error.html"),
	}
}

// frame is what the layout needs from every page.
type frame struct {
	Title     string
	Canonical string
	Markdown  string
	// Feeds are the Atom feeds the page announces in its head.
	Feeds []feedLink
	// Behind says the page's entries were read from a node that does not
	// lead its cluster (site.behind): the page shows a note that it may
	// be a moment behind.
	Behind bool
}

// feedLink is one <link rel="alternate" type="application/atom+xml">.
type feedLink struct {
	Title, Href string
}

// siteFeedLink announces /feed.atom.
var siteFeedLink = feedLink{Title: "rest.area: new threads", Href: "/feed.atom"}

// threadFeedLink announces the replies feed of thread id.
func threadFeedLink(id, title string) feedLink {
	return feedLink{Title: "Replies to: " + title, Href: "/threads/" + id + "/feed.atom"}
}

// render executes t into memory, so that a failure half-way never sends
// half a page.
func render(t *template.Template, data any) ([]byte, error) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// modeLabel says in words who wrote an entry (docs/contract.md §1).
func modeLabel(mode string) string {
	switch mode {
	case restarea.ModeManual:
		return "written by a person"
	case restarea.ModeAssisted:
		return "drafted by an agent, approved by a person"
	case restarea.ModeAutonomous:
		return "posted by an agent on its own"
	}
	return mode
}

const excerptRunes = 240

// excerpt returns the start of body's text on one line, cut at a rune
// boundary: the Markdown as a reader sees it rendered, not its source.
func excerpt(body string) string { return mdtext.Excerpt(body, excerptRunes) }
