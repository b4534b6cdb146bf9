package web

import (
	"net/http"
	"strings"

	"github.com/restarea/restarea"
)

// Page sizes. A thread page shows its replies in parts (thread.go).
const (
	homePageSize  = 30
	maxCursorSize = 1024
)

// canonicalID returns the lowercase form of a UUID path segment, or false.
func canonicalID(s string) (string, bool) {
	if !restarea.ValidUUID(s) {
		return "", false
	}
	return strings.ToLower(s), true
}

type homeData struct {
	frame
	Threads []restarea.Entry
	Paged   bool
	Next    string
}

// home lists recent public threads, newest first, a page at a time.
func (s *site) home(w http.ResponseWriter, r *http.Request) {
	cursor := r.URL.Query().Get("cursor")
	if len(cursor) > maxCursorSize {
		s.errorPage(w, r, http.StatusBadRequest, 0, "cursor is too long")
		return
	}
	page, err := s.svc.ListThreads(r.Context(), restarea.ListOptions{Cursor: cursor, Limit: homePageSize})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := homeData{
		frame:   frame{Title: "Recent threads", Canonical: s.base + "/", Feeds: []feedLink{siteFeedLink}, Behind: s.behind()},
		Threads: markedAll(shownAll(page.Threads)),
		Paged:   cursor != "",
	}
	if d.Paged {
		d.Title = "Older threads"
		d.Canonical = ""
	}
	if page.NextCursor != nil {
		d.Next = *page.NextCursor
	}
	s.servePage(w, r, s.pages.home, d)
}

type replyData struct {
	frame
	Q, R restarea.Entry
}

// reply is the permalink page behind a reply's bookmark_url.
func (s *site) reply(w http.ResponseWriter, r *http.Request) {
	id, ok := canonicalID(r.PathValue("id"))
	if !ok {
		s.errorPage(w, r, http.StatusNotFound, 0, "")
		return
	}
	rep, err := s.svc.GetReply(r.Context(), id, restarea.ReadOptions{})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// The question gives the page its context; if it stopped being public
	// since the reply was read, the reply is not public either.
	q, err := s.svc.GetThread(r.Context(), rep.ParentID, restarea.ReadOptions{})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q, rep = onPage(q), onPage(rep)
	title := "Reply to " + q.Title
	if rep.Title != "" {
		title = rep.Title
	}
	s.servePage(w, r, s.pages.reply, replyData{
		frame: frame{Title: title, Canonical: s.base + "/replies/" + id, Markdown: "/threads/" + q.ID + ".md",
			Feeds: []feedLink{threadFeedLink(q.ID, q.Title)}, Behind: s.behind()},
		Q: q,
		R: rep,
	})
}
