package web

import (
	"encoding/xml"
	"html/template"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/restarea/restarea"
)

// Feed sizes. A feed carries the newest entries only: readers keep what
// they have seen, and the API pages through the rest.
//
// A feed reads one page of the service: at most feedEntries entries and
// restarea.MaxPageBytes (1 MiB) of their text, the newest that fit; a
// thread's feed reads its replies newest first
// (restarea.ListOptions.NewestFirst), so it reads what it shows and no
// more, however long the thread. The document is streamed (serveStream)
// and written an entry at a time, each body rendered within
// pageRenderBudget (or found in bodyCache) as it is written, and it ends
// after the entry that takes it past feedBytes: a hostile body can grow 47
// times as Atom (20,000 '>' are 540 KB of nested quotes in HTML, escaped
// again in XML), so 50 of them would be 47 MB.
//
// What a feed GET holds is the page's entries (1 MiB of text and about
// 0.5 KiB of fields each), one body's HTML while it is written, and the
// stream's buffer: about 2 MiB. What it writes is at most feedBytes and one
// entry (940 KB for the most expanding body known, 20,000 '>';
// TestFeedBytes).
const (
	feedEntries = 50
	feedBytes   = 4 << 20
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
	Entries  *feedItems  `xml:"entry"`
}

// feedItems are a feed's entries, newest first, written by the encoder
// one at a time as it reaches them (xml.Marshaler), so that a body's HTML
// exists only while it is written.
type feedItems struct {
	es     []restarea.Entry // shown
	bodies *pageBodies
	// entry makes the Atom entry of es[i] with its body's HTML.
	entry func(i int, body template.HTML) atomEntry
	// written counts the document written so far in the current pass.
	written *counter
}

// MarshalXML writes the entries until the document has passed feedBytes;
// the first is always written. Both passes of a streamed feed write the
// same bytes (pageBodies keeps the first pass's decisions), so they stop
// at the same entry.
func (f *feedItems) MarshalXML(enc *xml.Encoder, start xml.StartElement) error {
	for i := range f.es {
		if err := enc.Flush(); err != nil {
			return err
		}
		if i > 0 && f.written.n > feedBytes {
			return nil
		}
		if err := enc.EncodeElement(f.entry(i, f.bodies.HTML(i)), start); err != nil {
			return err
		}
	}
	return nil
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
	threads := shownAll(page.Threads)
	var newest time.Time
	for _, q := range threads {
		if q.CreatedAt.After(newest) {
			newest = q.CreatedAt
		}
	}
	f.Entries = newFeedItems(threads, func(i int, body template.HTML) atomEntry {
		q := threads[i]
		return feedEntry(q, body, q.Title, s.base+"/threads/"+q.ID)
	})
	s.serveFeed(w, r, f, newest)
}

// threadFeed is /threads/{id}/feed.atom: a public question's newest
// public replies, newest first, as readers list them. A question that is
// not public is a 404, like its page.
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
	page, err := s.svc.ListReplies(r.Context(), id, restarea.ListOptions{Limit: feedEntries, NewestFirst: true})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q = shown(q)
	thread := s.base + "/threads/" + id
	f := s.newFeed(thread+"/feed.atom", "Replies to: "+q.Title, thread)
	replies := shownAll(page.Replies)
	newest := q.CreatedAt
	for _, rep := range replies {
		if rep.CreatedAt.After(newest) {
			newest = rep.CreatedAt
		}
	}
	f.Entries = newFeedItems(replies, func(i int, body template.HTML) atomEntry {
		rep := replies[i]
		title := rep.Title
		if title == "" {
			title = "Reply by " + rep.Actor.Name
		}
		return feedEntry(rep, body, title, s.base+"/replies/"+rep.ID)
	})
	s.serveFeed(w, r, f, newest)
}

// newFeedItems returns the entries es (shown, newest first) of a feed,
// their bodies rendered within pageRenderBudget from now.
func newFeedItems(es []restarea.Entry, entry func(int, template.HTML) atomEntry) *feedItems {
	return &feedItems{es: es, bodies: newPageBodies(es), entry: entry}
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

// serveFeed answers a feed, streamed, with its ETag; its updated is the
// newest entry's time (no entry listed is newer), and a feed without
// entries dates from the Unix epoch, which is as old as "nothing yet" can
// be. It has no Last-Modified: the newest listed entry's time goes back
// when that entry is hidden, deleted or expires, so a reader revalidating
// with If-Modified-Since would be told 304 and keep showing it. The
// ETag, a hash of the bytes, changes with every change of the feed.
func (s *site) serveFeed(w http.ResponseWriter, r *http.Request, f atomFeed, newest time.Time) {
	if newest.IsZero() {
		newest = time.Unix(0, 0)
	}
	f.Updated = atomTime(newest)
	err := s.serveStream(w, r, typeAtom, cachePage, func(out io.Writer) error {
		doc := &counter{w: out}
		f.Entries.written = doc
		if _, err := io.WriteString(doc, xml.Header); err != nil {
			return err
		}
		enc := xml.NewEncoder(doc)
		enc.Indent("", "  ")
		if err := enc.Encode(f); err != nil {
			return err
		}
		_, err := io.WriteString(doc, "\n")
		return err
	})
	if err != nil {
		s.log.Error("web: feed render failed", "path", r.URL.Path, "err", err)
		s.errorPage(w, r, http.StatusInternalServerError, 0, "")
	}
}
