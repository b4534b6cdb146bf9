package web

import (
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/restarea/restarea"
)

// The parts of a thread. A thread page and its .md list the replies a
// part at a time: at most partReplies replies and partBytes of their text
// (restarea.Entry.TextBytes), whichever comes first, and each part but the
// last links to the next. A thread within both bounds is one page and one
// .md file.
//
// What one view holds is the part's entries (partBytes of text plus about
// 0.5 KiB of fields a reply, so at most about 2.3 MiB), one body's HTML at
// a time and the stream's buffer: the answer itself is streamed
// (serveStream). Rendering adds to what is written, not to what is held:
// a body's HTML is at most about 4 times its text for ordinary bodies
// (every '<' is "&lt;") and 40 times for the most hostile shapes
// (TestRenderBodyBounded), written one body at a time.
const (
	partReplies = 500
	partBytes   = 2 << 20
	// maxFrom bounds the number of a part's first reply in its address.
	maxFrom = 1 << 30
)

// partAt is where a part starts: after the reply the service cursor
// names ("" for the first part), numbered from from (0: not known, for an
// address made by hand from an API cursor).
type partAt struct {
	cursor string
	from   int
}

// partOf reads a part's address from the query, or returns the reason it
// cannot be used. The cursor itself is checked by the service.
func partOf(r *http.Request) (partAt, string) {
	q := r.URL.Query()
	at := partAt{cursor: q.Get("cursor"), from: 1}
	if len(at.cursor) > maxCursorSize {
		return partAt{}, "cursor is too long"
	}
	if at.cursor == "" {
		return at, ""
	}
	at.from = 0
	if f := q.Get("from"); f != "" {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > maxFrom {
			return partAt{}, "from must be a reply number from 1 to " + strconv.Itoa(maxFrom)
		}
		at.from = n
	}
	return at, ""
}

// path is the address of the part of thread id at, with suffix ("" for
// the page, ".md" for the Markdown file).
func (at partAt) path(id, suffix string) string {
	p := "/threads/" + id + suffix
	if at.cursor == "" {
		return p
	}
	p += "?cursor=" + url.QueryEscape(at.cursor)
	if at.from > 0 {
		p += "&from=" + strconv.Itoa(at.from)
	}
	return p
}

// threadView is a question with the public replies of one part.
type threadView struct {
	Q       restarea.Entry
	Replies []restarea.Entry
	// At is where this part starts; Next where the next one does (its
	// cursor is empty when this part ends the thread).
	At, Next partAt
}

// Whole reports whether the part is the whole thread.
func (v threadView) Whole() bool { return v.At.cursor == "" && v.Next.cursor == "" }

// From is the number of the first reply listed, 0 when not known.
func (v threadView) From() int { return v.At.from }

// Last is the number of the last reply listed, 0 when not known.
func (v threadView) Last() int {
	if v.At.from == 0 {
		return 0
	}
	return v.At.from + len(v.Replies) - 1
}

// NextFrom is the number of the next part's first reply, 0 when not known.
func (v threadView) NextFrom() int { return v.Next.from }

// HasNext reports whether more replies follow this part.
func (v threadView) HasNext() bool { return v.Next.cursor != "" }

// loadPart reads a public question and the public replies of the part at,
// oldest first, within partReplies and partBytes. The service's pages are
// cursors, not offsets, so a part that would end inside a page asks again
// for exactly the replies that fit: the next part then starts right after
// the last reply shown. Pages may hold fewer replies than asked for, so the
// loop is bounded by the replies gathered, by a number of calls, and by
// progress: a cursor that comes back unchanged ends the thread.
func (s *site) loadPart(r *http.Request, id string, at partAt) (threadView, error) {
	q, err := s.svc.GetThread(r.Context(), id, restarea.ReadOptions{})
	if err != nil {
		return threadView{}, err
	}
	v := threadView{Q: shown(q), At: at}
	cursor, size, refit := at.cursor, 0, 0
	for calls := 0; calls < 2*partReplies+2; calls++ {
		if len(v.Replies) == partReplies {
			v.Next = v.nextAt(cursor)
			return v, nil
		}
		limit := min(restarea.MaxPageLimit, partReplies-len(v.Replies))
		if refit > 0 {
			limit = refit
		}
		p, err := s.svc.ListReplies(r.Context(), id, restarea.ListOptions{Cursor: cursor, Limit: limit})
		if err != nil {
			return threadView{}, err
		}
		fit, grown := 0, size
		for _, e := range p.Replies[:min(len(p.Replies), limit)] {
			if grown += e.TextBytes(); grown > partBytes && len(v.Replies)+fit > 0 {
				break
			}
			fit++
		}
		if fit == 0 && len(p.Replies) > 0 {
			// The part is full: the next reply starts the next one.
			v.Next = v.nextAt(cursor)
			return v, nil
		}
		if fit < len(p.Replies) {
			refit = fit
			continue
		}
		refit = 0
		v.Replies = append(v.Replies, shownAll(p.Replies)...)
		size = grown
		if p.NextCursor == nil || *p.NextCursor == cursor {
			return v, nil
		}
		cursor = *p.NextCursor
	}
	// The service kept answering pages that did not fit; what was read
	// ends here, and the next part starts right after it.
	v.Next = v.nextAt(cursor)
	return v, nil
}

// nextAt is the start of the part after v, at the service cursor c.
func (v threadView) nextAt(c string) partAt {
	next := partAt{cursor: c}
	if v.At.from > 0 {
		next.from = v.At.from + len(v.Replies)
	}
	return next
}

type threadData struct {
	frame
	threadView
	MarkdownPath string
	FeedPath     string
	// FirstPath and NextPath are the first part's and the next part's
	// addresses.
	FirstPath, NextPath string
	Bodies              *pageBodies
}

// PartReplies and PartMiB state the bounds of a part on the page.
func (threadData) PartReplies() int { return partReplies }
func (threadData) PartMiB() int     { return partBytes >> 20 }

// thread shows a question and one part of its replies, each reply at
// #reply-{id}, or, for a path ending in ".md", the same part as Markdown.
// The suffix is handled here because a ServeMux wildcard takes a whole
// path segment.
func (s *site) thread(w http.ResponseWriter, r *http.Request) {
	raw := r.PathValue("id")
	if base, ok := strings.CutSuffix(raw, ".md"); ok {
		s.threadMarkdown(w, r, base)
		return
	}
	id, ok := canonicalID(raw)
	if !ok {
		s.errorPage(w, r, http.StatusNotFound, 0, "")
		return
	}
	at, bad := partOf(r)
	if bad != "" {
		s.errorPage(w, r, http.StatusBadRequest, 0, bad)
		return
	}
	v, err := s.loadPart(r, id, at)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v.Q, v.Replies = marked(v.Q), markedAll(v.Replies)
	md := at.path(id, ".md")
	feed := threadFeedLink(id, v.Q.Title)
	canonical := s.base + "/threads/" + id
	if at.cursor != "" {
		canonical = ""
	}
	s.servePage(w, r, s.pages.thread, threadData{
		frame: frame{Title: v.Q.Title, Canonical: canonical, Markdown: md,
			Feeds: []feedLink{feed, siteFeedLink}, Behind: s.behind()},
		threadView:   v,
		MarkdownPath: md,
		FeedPath:     feed.Href,
		FirstPath:    "/threads/" + id,
		NextPath:     v.Next.path(id, ""),
		Bodies:       newPageBodies(v.Replies),
	})
}

// pageBodies renders the reply bodies of one page within
// pageRenderBudget, deciding on the first pass over the page which bodies
// are shown as plain text, and keeping that decision on the second, so
// both passes of a streamed page write the same bytes. Only the decisions
// are held, not the HTML: a body rendered once is in bodyCache, and one
// pushed out of it meanwhile renders again to the same HTML.
type pageBodies struct {
	es       []restarea.Entry
	deadline time.Time
	decided  []bool
	plain    []bool
}

func newPageBodies(es []restarea.Entry) *pageBodies {
	return &pageBodies{es: es, deadline: time.Now().Add(pageRenderBudget),
		decided: make([]bool, len(es)), plain: make([]bool, len(es))}
}

// HTML returns the body of reply i as the page shows it.
func (b *pageBodies) HTML(i int) template.HTML {
	body := b.es[i].Body
	if b.decided[i] {
		if b.plain[i] {
			return plainBody(body)
		}
		return renderBody(body)
	}
	b.decided[i] = true
	if h, ok := bodyCache.lookup(body); ok {
		return h
	}
	if time.Now().After(b.deadline) {
		b.plain[i] = true
		return plainBody(body)
	}
	return renderBody(body)
}

// servePage renders a public page and answers it with its ETag, streamed
// (serveStream), so a page is never held whole.
func (s *site) servePage(w http.ResponseWriter, r *http.Request, t *template.Template, data any) {
	err := s.serveStream(w, r, typeHTML, cachePage, func(out io.Writer) error {
		return t.ExecuteTemplate(out, "layout.html", data)
	})
	if err != nil {
		s.log.Error("web: render failed", "path", r.URL.Path, "err", err)
		s.errorPage(w, r, http.StatusInternalServerError, 0, "")
	}
}
