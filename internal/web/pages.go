package web

import (
	"html/template"
	"net/http"
	"strings"

	"github.com/restarea/restarea"
)

// Page sizes. A thread page shows every public reply, but within a bound
// so one huge thread cannot make a page of unbounded size.
const (
	homePageSize  = 30
	maxReplies    = 2000
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
		frame:   frame{Title: "Recent threads", Canonical: s.base + "/", Feeds: []feedLink{siteFeedLink}},
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

// threadView is a question with the public replies a page shows.
type threadView struct {
	Q          restarea.Entry
	Replies    []restarea.Entry
	Cut        bool
	NextCursor string
}

// loadThread reads a public question and its public replies, oldest
// first, stopping at maxReplies. Pages may hold fewer replies than asked
// for, so the loop is bounded by the replies gathered, by a number of
// calls, and by progress: a cursor that comes back unchanged ends it.
func (s *site) loadThread(r *http.Request, id string) (threadView, error) {
	q, err := s.svc.GetThread(r.Context(), id, restarea.ReadOptions{})
	if err != nil {
		return threadView{}, err
	}
	v := threadView{Q: shown(q)}
	cursor := ""
	for calls := 0; calls < maxReplies; calls++ {
		// Asking for no more than the bound leaves, when the bound is
		// reached, a next cursor that starts exactly after the last reply
		// shown.
		limit := min(restarea.MaxPageLimit, maxReplies-len(v.Replies))
		p, err := s.svc.ListReplies(r.Context(), id, restarea.ListOptions{Cursor: cursor, Limit: limit})
		if err != nil {
			return threadView{}, err
		}
		v.Replies = append(v.Replies, shownAll(p.Replies)...)
		if p.NextCursor == nil {
			if len(v.Replies) > maxReplies {
				break
			}
			return v, nil
		}
		stuck := *p.NextCursor == cursor
		cursor = *p.NextCursor
		if stuck || len(v.Replies) >= maxReplies {
			break
		}
	}
	if len(v.Replies) > maxReplies {
		v.Replies = v.Replies[:maxReplies]
	}
	v.Cut, v.NextCursor = true, cursor
	return v, nil
}

type threadData struct {
	frame
	threadView
	MarkdownPath string
	FeedPath     string
	// ReplyBodies are the replies' bodies as HTML, in order.
	ReplyBodies []template.HTML
}

// thread shows a question and its replies, each reply at #reply-{id}, or,
// for a path ending in ".md", the same thread as Markdown. The suffix is
// handled here because a ServeMux wildcard takes a whole path segment.
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
	v, err := s.loadThread(r, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v.Q, v.Replies = marked(v.Q), markedAll(v.Replies)
	md := "/threads/" + id + ".md"
	feed := threadFeedLink(id, v.Q.Title)
	s.servePage(w, r, s.pages.thread, threadData{
		frame: frame{Title: v.Q.Title, Canonical: s.base + "/threads/" + id, Markdown: md,
			Feeds: []feedLink{feed, siteFeedLink}},
		threadView:   v,
		MarkdownPath: md,
		FeedPath:     feed.Href,
		ReplyBodies:  renderBodies(v.Replies),
	})
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
			Feeds: []feedLink{threadFeedLink(q.ID, q.Title)}},
		Q: q,
		R: rep,
	})
}

// servePage renders a public page and answers it with its ETag.
func (s *site) servePage(w http.ResponseWriter, r *http.Request, t *template.Template, data any) {
	body, err := render(t, data)
	if err != nil {
		s.log.Error("web: render failed", "path", r.URL.Path, "err", err)
		s.errorPage(w, r, http.StatusInternalServerError, 0, "")
		return
	}
	serveOK(w, r, typeHTML, cachePage, body)
}
