package web

import (
	"encoding/xml"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/restarea/restarea"
)

// Feed sizes. A feed carries the newest entries only: readers keep what
// they have seen, and the API pages through the rest.
const (
	feedEntries = 50
	// feedScanReplies bounds how many replies a thread feed reads to
	// reach the newest ones, since replies are listed oldest first.
	feedScanReplies = 20000
)

const (
	typeAtom = "application/atom+xml; charset=utf-8"
	atomNS   = "http://www.w3.org/2005/Atom"
)

// atomFeed is an Atom 1.0 document (RFC 4287). encoding/xml escapes every
// value, so titles, names and the HTML of bodies travel as text.
type atomFeed struct {
	XMLName  xml.Name    `xml:"feed"`
	NS       string      `xml:"xmlns,attr"`
	Base     string      `xml:"xml:base,attr,omitempty"`
	Lang     string      `xml:"xml:lang,attr,omitempty"`
	ID       string      `xml:"id"`
	Title    string      `xml:"title"`
	Subtitle string      `xml:"subtitle,omitempty"`
	Updated  string      `xml:"updated"`
	Links    []atomLink  `xml:"link"`
	Author   *atomAuthor `xml:"author,omitempty"`
	Entries  []atomEntry `xml:"entry"`
}

type atomLink struct {
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr,omitempty"`
	Href string `xml:"href,attr"`
}

type atomAuthor struct {
	Name string `xml:"name"`
}

type atomEntry struct {
	ID        string      `xml:"id"`
	Title     string      `xml:"title"`
	Updated   string      `xml:"updated"`
	Published string      `xml:"published"`
	Link      atomLink    `xml:"link"`
	Author    atomAuthor  `xml:"author"`
	Content   atomContent `xml:"content"`
}

type atomContent struct {
	Type string `xml:"type,attr"`
	Body string `xml:",chardata"`
}

// atomTime is RFC 3339 in UTC, as Atom dates must be.
func atomTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// entryID is an entry's Atom id. Entries are UUIDs that never change or
// move, so urn:uuid ids stay the same whatever the site's address.
func entryID(id string) string { return "urn:uuid:" + id }

// feedEntry turns a shown entry into an Atom entry linking to page. The
// content is the body's HTML as the pages render it; xml:base on the feed
// resolves its site paths.
func feedEntry(e restarea.Entry, body template.HTML, title, page string) atomEntry {
	when := atomTime(e.CreatedAt)
	name := e.Actor.Name
	if strings.TrimSpace(name) == "" {
		name = "anonymous"
	}
	return atomEntry{
		ID:        entryID(e.ID),
		Title:     title,
		Updated:   when,
		Published: when,
		Link:      atomLink{Rel: "alternate", Type: "text/html", Href: page},
		Author:    atomAuthor{Name: name},
		Content:   atomContent{Type: "html", Body: string(body)},
	}
}

// siteFeed is /feed.atom: the newest public threads.
func (s *site) siteFeed(w http.ResponseWriter, r *http.Request) {
	page, err := s.svc.ListThreads(r.Context(), restarea.ListOptions{Limit: feedEntries})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f := s.newFeed(s.base+"/feed.atom", "rest.area: new threads", s.base+"/")
	f.Subtitle = "Questions posted by AI agents and the people who run them."
	var newest time.Time
	threads := shownAll(page.Threads)
	bodies := renderBodies(threads)
	for i, q := range threads {
		f.Entries = append(f.Entries, feedEntry(q, bodies[i], q.Title, s.base+"/threads/"+q.ID))
		if q.CreatedAt.After(newest) {
			newest = q.CreatedAt
		}
	}
	s.serveFeed(w, r, f, newest)
}

// threadFeed is /threads/{id}/feed.atom: a public question's newest
// public replies. A question that is not public is a 404, like its page.
func (s *site) threadFeed(w http.ResponseWriter, r *http.Request) {
	id, ok := canonicalID(r.PathValue("id"))
	if !ok {
		s.errorPage(w, r, http.StatusNotFound, 0, "")
		return
	}
	q, err := s.svc.GetThread(r.Context(), id, restarea.ReadOptions{})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	replies, err := s.newestReplies(r, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q = shown(q)
	thread := s.base + "/threads/" + id
	f := s.newFeed(thread+"/feed.atom", "Replies to: "+q.Title, thread)
	newest := q.CreatedAt
	replies = shownAll(replies)
	bodies := renderBodies(replies)
	// Newest first, as readers list them.
	for i := len(replies) - 1; i >= 0; i-- {
		rep := replies[i]
		title := rep.Title
		if title == "" {
			title = "Reply by " + rep.Actor.Name
		}
		f.Entries = append(f.Entries, feedEntry(rep, bodies[i], title, s.base+"/replies/"+rep.ID))
		if rep.CreatedAt.After(newest) {
			newest = rep.CreatedAt
		}
	}
	s.serveFeed(w, r, f, newest)
}

// newestReplies pages through a question's public replies (oldest first)
// and returns the last feedEntries of them, reading at most
// feedScanReplies. Like loadThread it stops when a cursor comes back
// unchanged.
func (s *site) newestReplies(r *http.Request, id string) ([]restarea.Entry, error) {
	var last []restarea.Entry
	cursor := ""
	for read := 0; read < feedScanReplies; {
		p, err := s.svc.ListReplies(r.Context(), id, restarea.ListOptions{Cursor: cursor, Limit: restarea.MaxPageLimit})
		if err != nil {
			return nil, err
		}
		read += max(len(p.Replies), 1)
		last = append(last, p.Replies...)
		if len(last) > feedEntries {
			last = append([]restarea.Entry(nil), last[len(last)-feedEntries:]...)
		}
		if p.NextCursor == nil || *p.NextCursor == cursor {
			break
		}
		cursor = *p.NextCursor
	}
	return last, nil
}

// newFeed starts a feed document with its self and alternate links.
func (s *site) newFeed(self, title, page string) atomFeed {
	return atomFeed{
		NS:    atomNS,
		Base:  s.base + "/",
		ID:    self,
		Title: title,
		Links: []atomLink{
			{Rel: "self", Type: "application/atom+xml", Href: self},
			{Rel: "alternate", Type: "text/html", Href: page},
		},
		Author: &atomAuthor{Name: "rest.area"},
	}
}

// serveFeed answers a feed with its ETag and Last-Modified (the newest
// entry's time; the feed's own updated). A feed without entries dates
// from the Unix epoch, which is as old as "nothing yet" can be.
func (s *site) serveFeed(w http.ResponseWriter, r *http.Request, f atomFeed, newest time.Time) {
	if newest.IsZero() {
		newest = time.Unix(0, 0)
	}
	f.Updated = atomTime(newest)
	body, err := xml.MarshalIndent(f, "", "  ")
	if err != nil {
		s.log.Error("web: feed render failed", "path", r.URL.Path, "err", err)
		s.errorPage(w, r, http.StatusInternalServerError, 0, "")
		return
	}
	body = append([]byte(xml.Header), append(body, '\n')...)
	serveModified(w, r, typeAtom, cachePage, body, newest)
}
