package web

import (
	"context"
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

// The test's own reading of Atom 1.0 (RFC 4287), apart from the types
// that write it: namespaced names, so a feed in the wrong namespace does
// not decode.
type testFeed struct {
	XMLName xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	Base    string      `xml:"http://www.w3.org/XML/1998/namespace base,attr"`
	ID      string      `xml:"http://www.w3.org/2005/Atom id"`
	Title   string      `xml:"http://www.w3.org/2005/Atom title"`
	Updated string      `xml:"http://www.w3.org/2005/Atom updated"`
	Links   []testLink  `xml:"http://www.w3.org/2005/Atom link"`
	Author  []testName  `xml:"http://www.w3.org/2005/Atom author"`
	Entries []testEntry `xml:"http://www.w3.org/2005/Atom entry"`
}

type testLink struct {
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr"`
	Href string `xml:"href,attr"`
}

type testName struct {
	Name string `xml:"http://www.w3.org/2005/Atom name"`
}

type testEntry struct {
	ID        string     `xml:"http://www.w3.org/2005/Atom id"`
	Title     string     `xml:"http://www.w3.org/2005/Atom title"`
	Updated   string     `xml:"http://www.w3.org/2005/Atom updated"`
	Published string     `xml:"http://www.w3.org/2005/Atom published"`
	Links     []testLink `xml:"http://www.w3.org/2005/Atom link"`
	Author    []testName `xml:"http://www.w3.org/2005/Atom author"`
	Content   struct {
		Type string `xml:"type,attr"`
		Body string `xml:",chardata"`
	} `xml:"http://www.w3.org/2005/Atom content"`
}

// decodeFeed parses an Atom document and checks what RFC 4287 requires
// of it: a feed id, title and updated; per entry an id, title, updated,
// an alternate link, and an author (its own or the feed's); ids that are
// absolute IRIs; RFC 3339 times. It returns the feed for further checks.
func decodeFeed(t *testing.T, body string) testFeed {
	t.Helper()
	if !strings.HasPrefix(body, `<?xml version="1.0" encoding="UTF-8"?>`) {
		t.Fatalf("feed does not start with an XML declaration: %.80q", body)
	}
	var f testFeed
	if err := xml.Unmarshal([]byte(body), &f); err != nil {
		t.Fatalf("feed is not Atom XML: %v\n%s", err, body)
	}
	rfc3339 := func(what, v string) time.Time {
		ts, err := time.Parse(time.RFC3339, v)
		if err != nil {
			t.Errorf("%s %q is not RFC 3339: %v", what, v, err)
		}
		return ts
	}
	absolute := func(what, v string) {
		if !strings.HasPrefix(v, "urn:uuid:") && !strings.HasPrefix(v, testBase+"/") {
			t.Errorf("%s %q is not an absolute, stable IRI", what, v)
		}
	}
	absolute("feed id", f.ID)
	if f.Title == "" {
		t.Error("feed has no title")
	}
	updated := rfc3339("feed updated", f.Updated)
	self := false
	for _, l := range f.Links {
		self = self || l.Rel == "self" && l.Href == f.ID
	}
	if !self {
		t.Errorf("feed has no rel=self link to %s: %+v", f.ID, f.Links)
	}
	feedAuthor := len(f.Author) > 0 && f.Author[0].Name != ""
	for _, e := range f.Entries {
		absolute("entry id", e.ID)
		if e.Title == "" {
			t.Errorf("entry %s has no title", e.ID)
		}
		if u := rfc3339("entry updated", e.Updated); u.After(updated) {
			t.Errorf("entry %s updated %s after the feed's %s", e.ID, e.Updated, f.Updated)
		}
		rfc3339("entry published", e.Published)
		if len(e.Links) == 0 || e.Links[0].Rel != "alternate" || !strings.HasPrefix(e.Links[0].Href, testBase+"/") {
			t.Errorf("entry %s has no absolute alternate link: %+v", e.ID, e.Links)
		}
		if !feedAuthor && (len(e.Author) == 0 || e.Author[0].Name == "") {
			t.Errorf("entry %s has no author name", e.ID)
		}
		if e.Content.Type != "html" {
			t.Errorf("entry %s content type %q, want html", e.ID, e.Content.Type)
		}
		checkSafeHTML(t, e.ID, e.Content.Body)
	}
	return f
}

func TestSiteFeed(t *testing.T) {
	f := newBoard()
	srv := serve(t, f)
	a := get(t, srv, "/feed.atom")
	if a.status != 200 || a.header.Get("Content-Type") != typeAtom || a.header.Get("Cache-Control") != cachePage || a.header.Get("ETag") == "" {
		t.Fatalf("GET /feed.atom: %d %v", a.status, a.header)
	}
	feed := decodeFeed(t, a.body)
	if feed.ID != testBase+"/feed.atom" || feed.Base != testBase+"/" {
		t.Errorf("feed id %q, xml:base %q", feed.ID, feed.Base)
	}
	var ids, titles []string
	for _, e := range feed.Entries {
		ids, titles = append(ids, e.ID), append(titles, e.Title)
	}
	want := []string{"urn:uuid:" + qJapanese, "urn:uuid:" + qScript, "urn:uuid:" + qPlain}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("entries %v, want %v (newest first, the hidden one left out)", ids, want)
	}
	if titles[1] != scriptTitle {
		t.Errorf("script title decoded as %q, want it as text %q", titles[1], scriptTitle)
	}
	// The newest public thread dates the feed: the hidden one is newer
	// but must not show, not even through the date.
	newest := fakeEpoch.Add(2 * time.Minute)
	if feed.Updated != newest.Format(time.RFC3339) {
		t.Errorf("updated %s, want %s", feed.Updated, newest)
	}
	plain := feed.Entries[2]
	if plain.Links[0].Href != testBase+"/threads/"+qPlain || plain.Author[0].Name != "asker" ||
		plain.Content.Body != "<p>line one<br>\nline two</p>\n" {
		t.Errorf("entry %+v", plain)
	}
	checkText(t, a.body, nil, []string{"HIDDEN", qHidden, "<script>", "<img"})
}

func TestThreadFeed(t *testing.T) {
	f := newBoard()
	srv := serve(t, f)
	a := get(t, srv, "/threads/"+strings.ToUpper(qPlain)+"/feed.atom")
	if a.status != 200 || a.header.Get("Content-Type") != typeAtom || a.header.Get("Cache-Control") != cachePage {
		t.Fatalf("thread feed: %d %v\n%s", a.status, a.header, a.body)
	}
	feed := decodeFeed(t, a.body)
	if feed.ID != testBase+"/threads/"+qPlain+"/feed.atom" || feed.Title != "Replies to: How do retries work?" {
		t.Errorf("feed id %q title %q", feed.ID, feed.Title)
	}
	if len(feed.Entries) != 2 || feed.Entries[0].ID != "urn:uuid:"+rTricky || feed.Entries[1].ID != "urn:uuid:"+rFirst {
		t.Fatalf("entries %+v, want the two public replies, newest first", feed.Entries)
	}
	tricky := feed.Entries[0]
	if tricky.Title != "<b>bold?</b>" || tricky.Links[0].Href != testBase+"/replies/"+rTricky ||
		!strings.Contains(tricky.Content.Body, "<pre><code>x := 1") || !strings.Contains(tricky.Content.Body, "<h5>How to reply</h5>") {
		t.Errorf("tricky reply entry %+v", tricky)
	}
	if feed.Entries[1].Title != "Reply by replier" {
		t.Errorf("untitled reply titled %q", feed.Entries[1].Title)
	}
	if feed.Updated != fakeEpoch.Add(2*time.Second).Format(time.RFC3339) {
		t.Errorf("updated %s", feed.Updated)
	}
	checkText(t, a.body, nil, []string{"HIDDEN REPLY BODY", rHidden, "<b>bold"})

	// A thread without replies has a valid, empty feed dated by its question.
	empty := decodeFeed(t, get(t, srv, "/threads/"+qJapanese+"/feed.atom").body)
	if len(empty.Entries) != 0 || empty.Updated != fakeEpoch.Add(2*time.Minute).Format(time.RFC3339) {
		t.Errorf("empty thread feed %+v", empty)
	}

	for _, path := range []string{
		"/threads/" + qHidden + "/feed.atom",      // hidden question
		"/threads/" + fakeID(9, 9) + "/feed.atom", // never existed
		"/threads/" + rFirst + "/feed.atom",       // a reply is not a thread
		"/threads/not-a-uuid/feed.atom",
	} {
		a := get(t, srv, path)
		if a.status != 404 || a.header.Get("Cache-Control") != cacheNoStore || strings.Contains(a.body, "REPLY OF HIDDEN") {
			t.Errorf("GET %s: %d %s", path, a.status, a.header.Get("Cache-Control"))
		}
	}
}

// TestThreadFeedNewestReplies: the feed of a thread with more replies
// than it holds lists the newest feedEntries, newest first, and reads
// those only: one page of the service's replies, newest first, of
// feedEntries, whatever the length of the thread.
func TestThreadFeedNewestReplies(t *testing.T) {
	f := newBoard()
	q := fakeID(5, 1)
	addQuestion(f, q, "busy", "many replies")
	const total = 20 * feedEntries
	for i := range total {
		addReply(f, q, fakeID(6, i), "", "reply")
	}
	srv := serve(t, f)
	f.ResetCalls()
	feed := decodeFeed(t, get(t, srv, "/threads/"+q+"/feed.atom").body)
	if len(feed.Entries) != feedEntries {
		t.Fatalf("%d entries, want the newest %d", len(feed.Entries), feedEntries)
	}
	for i, e := range feed.Entries {
		if want := "urn:uuid:" + fakeID(6, total-1-i); e.ID != want {
			t.Fatalf("entry %d is %s, want %s (the newest first)", i, e.ID, want)
		}
	}
	var lists []testkit.Call
	for _, c := range f.Calls() {
		if c.Method == "ListReplies" {
			lists = append(lists, c)
		}
	}
	want := restarea.ListOptions{Limit: feedEntries, NewestFirst: true}
	if len(lists) != 1 || lists[0].List != want {
		t.Fatalf("the feed listed replies with %+v, want one call with %+v", lists, want)
	}
}

// TestFeedBytes: a feed holds the newest entries within
// restarea.MaxPageBytes of text, and its document ends after the entry
// that takes it past feedBytes, so the most hostile bodies (nested quotes
// 47 times their size as Atom, '<' 8 times) make a valid feed of at most
// feedBytes and one entry, well under the 32 MiB a request may hold.
func TestFeedBytes(t *testing.T) {
	f := testkit.NewFakeService()
	big := strings.Repeat("😀", restarea.MaxBody)
	q := hostileBoard(f, 20, big, true)
	srv := serve(t, f)
	feed := decodeFeed(t, get(t, srv, "/threads/"+q+"/feed.atom").body)
	fit := restarea.MaxPageBytes / (len(big) + len(" ") + len(fakeID(0, 0)) + len("replier"))
	if len(feed.Entries) != fit || feed.Entries[0].ID != "urn:uuid:"+fakeID(8, 19) || feed.Entries[fit-1].ID != "urn:uuid:"+fakeID(8, 20-fit) {
		t.Errorf("%d entries of 80 KB, want the newest %d (1 MiB of text)", len(feed.Entries), fit)
	}

	const most = 32 << 20
	for _, c := range []struct {
		name string
		body string
		// entry is the most one entry of body adds to the document.
		entry int
	}{
		{"nested quotes", strings.Repeat(">", restarea.MaxBody), 1 << 20},
		{"open brackets", strings.Repeat("<", restarea.MaxBody), 200 << 10},
	} {
		f := testkit.NewFakeService()
		q := hostileBoard(f, 60, c.body, false)
		srv := serve(t, f)
		for _, path := range []string{"/threads/" + q + "/feed.atom", "/feed.atom"} {
			a := get(t, srv, path)
			size := len(a.body)
			if a.status != 200 || a.header.Get("Content-Length") != strconv.Itoa(size) {
				t.Fatalf("%s of %s: %d, Content-Length %s for %d bytes", path, c.name, a.status, a.header.Get("Content-Length"), size)
			}
			if size > feedBytes+c.entry || size > most {
				t.Errorf("%s of %s: %d bytes, want at most %d and one entry (%d)", path, c.name, size, feedBytes, c.entry)
			}
			feed := decodeFeed(t, a.body)
			n := len(feed.Entries)
			if n < 2 || n >= feedEntries || size < feedBytes {
				t.Errorf("%s of %s: %d entries in %d bytes, want the document cut at %d bytes", path, c.name, n, size, feedBytes)
			}
			t.Logf("%s of %s: %d entries, %d bytes", path, c.name, n, size)
			if again := get(t, srv, path); again.body != a.body || again.header.Get("ETag") != a.header.Get("ETag") {
				t.Errorf("%s of %s: a second GET gave other bytes", path, c.name)
			}
		}
	}
}

func TestFeedValidators(t *testing.T) {
	f := newBoard()
	srv := serve(t, f)
	for _, path := range []string{"/feed.atom", "/threads/" + qPlain + "/feed.atom"} {
		a := get(t, srv, path)
		etag := a.header.Get("ETag")
		if etag == "" || a.header.Get("Last-Modified") != "" {
			t.Fatalf("%s: ETag %q Last-Modified %q, want an ETag only", path, etag, a.header.Get("Last-Modified"))
		}
		for _, c := range []struct {
			name   string
			header map[string]string
			status int
		}{
			{"etag", map[string]string{"If-None-Match": etag}, 304},
			// Without a Last-Modified a date never makes a 304 (see
			// TestFeedHiddenNewestIsNotModifiedSince).
			{"later date", map[string]string{"If-Modified-Since": "Sat, 01 Jan 2100 00:00:00 GMT"}, 200},
			{"other etag, later date", map[string]string{"If-None-Match": `"other"`, "If-Modified-Since": "Sat, 01 Jan 2100 00:00:00 GMT"}, 200},
		} {
			if got := do(t, srv, http.MethodGet, path, c.header); got.status != c.status {
				t.Errorf("%s with %s: %d, want %d", path, c.name, got.status, c.status)
			}
		}
		if h := do(t, srv, http.MethodHead, path, nil); h.status != 200 || h.body != "" || h.header.Get("ETag") != etag {
			t.Errorf("HEAD %s: %d %q", path, h.status, h.body)
		}
	}
	// Hiding a reply changes the thread feed's bytes, hence its tag.
	before := get(t, srv, "/threads/"+qPlain+"/feed.atom")
	f.SetVisible(rTricky, false)
	after := get(t, srv, "/threads/"+qPlain+"/feed.atom")
	if after.header.Get("ETag") == before.header.Get("ETag") || strings.Contains(after.body, rTricky) {
		t.Error("hiding a reply left the feed unchanged")
	}
	if got := do(t, srv, http.MethodGet, "/threads/"+qPlain+"/feed.atom", map[string]string{"If-None-Match": before.header.Get("ETag")}); got.status != 200 {
		t.Errorf("old tag after a hide: %d, want 200", got.status)
	}
}

func TestPagesAnnounceFeeds(t *testing.T) {
	srv := serve(t, newBoard())
	site := `<link rel="alternate" type="application/atom+xml" title="rest.area: new threads" href="/feed.atom">`
	thread := `<link rel="alternate" type="application/atom+xml" title="Replies to: How do retries work?" href="/threads/` + qPlain + `/feed.atom">`
	checkText(t, get(t, srv, "/").body, []string{site}, nil)
	checkText(t, get(t, srv, "/threads/"+qPlain).body, []string{thread, site, `<a href="/threads/` + qPlain + `/feed.atom" type="application/atom+xml">`}, nil)
	checkText(t, get(t, srv, "/replies/"+rFirst).body, []string{thread}, nil)
	// The guide and llms.txt tell agents about the feeds.
	checkText(t, get(t, srv, "/guide").body, []string{"<code>" + testBase + "/feed.atom</code>", "<code>" + testBase + "/threads/{id}/feed.atom</code>"}, nil)
	checkText(t, get(t, srv, "/guide.md").body, []string{testBase + "/feed.atom"}, nil)
	checkText(t, get(t, srv, "/llms.txt").body, []string{testBase + "/feed.atom (new questions)"}, nil)
	// A title is escaped in the attribute like everywhere else.
	checkText(t, get(t, srv, "/threads/"+qScript).body, []string{`title="Replies to: &lt;script&gt;`}, []string{"<script"})
}

// Hiding the newest entry makes a feed older by its dates; a reader that
// revalidates must still get the new document, not a 304 that keeps the
// hidden entry on its screen.
func TestFeedHiddenNewestIsNotModifiedSince(t *testing.T) {
	f := newBoard()
	srv := serve(t, f)
	before := get(t, srv, "/feed.atom")
	if !strings.Contains(before.body, qJapanese) {
		t.Fatalf("the newest public question is not in the feed")
	}
	if _, err := f.HideEntry(context.Background(), qJapanese); err != nil {
		t.Fatal(err)
	}
	for _, c := range []map[string]string{
		{"If-None-Match": before.header.Get("ETag")},
		{"If-Modified-Since": time.Now().UTC().Format(http.TimeFormat)},
		{"If-Modified-Since": fakeEpoch.Add(time.Hour).UTC().Format(http.TimeFormat)},
	} {
		got := do(t, srv, http.MethodGet, "/feed.atom", c)
		if got.status != http.StatusOK || strings.Contains(got.body, qJapanese) {
			t.Errorf("after hiding the newest entry, GET with %v: %d, still lists it: %v", c, got.status, strings.Contains(got.body, qJapanese))
		}
	}
}
