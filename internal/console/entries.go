package console

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/restarea/restarea"
)

// Bounds of the entry pages' reads. Filtering happens on what
// AdminService.ListEntries returns, so a filtered list reads at most
// scanPages pages of MaxPageLimit entries per screen and offers to go on
// from there; an entry's own page looks for it among the newest
// findPages × MaxPageLimit entries.
const (
	listSize  = 50
	scanPages = 10
	findPages = 25
)

// filter is the entry list's query; Empty reports no filter at all.
type filter struct {
	Type, Visibility, Actor, Text string
}

func filterOf(q url.Values) filter {
	f := filter{
		Type:       q.Get("type"),
		Visibility: q.Get("visibility"),
		Actor:      strings.TrimSpace(q.Get("actor")),
		Text:       strings.TrimSpace(q.Get("q")),
	}
	if f.Type != restarea.TypeQuestion && f.Type != restarea.TypeReply {
		f.Type = ""
	}
	if f.Visibility != "visible" && f.Visibility != "hidden" {
		f.Visibility = ""
	}
	return f
}

func (f filter) Empty() bool { return f == filter{} }

func (f filter) match(e restarea.Entry) bool {
	if f.Type != "" && e.Type != f.Type {
		return false
	}
	if f.Visibility != "" && entryState(e) != f.Visibility {
		return false
	}
	if f.Actor != "" && !containsFold(e.Actor.Name, f.Actor) {
		return false
	}
	if f.Text != "" && !containsFold(e.Title, f.Text) && !containsFold(e.Body, f.Text) {
		return false
	}
	return true
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// query is the filter as a query string, for the "further" link.
func (f filter) query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"type": f.Type, "visibility": f.Visibility, "actor": f.Actor, "q": f.Text} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// entriesView is the entry list's data.
type entriesView struct {
	Filter  filter
	Entries []restarea.Entry
	Scanned int
	// Next is the address of the following screen; "" after the oldest.
	Next  string
	Paged bool
}

// home is GET /admin: the entry list is the console's first page.
func (s *server) home(w http.ResponseWriter, r *http.Request, sess session) {
	http.Redirect(w, r, Prefix+"/entries", http.StatusSeeOther)
}

// entries is GET /admin/entries: the newest entries, hidden ones
// included, optionally filtered.
func (s *server) entries(w http.ResponseWriter, r *http.Request, sess session) {
	q := r.URL.Query()
	f := filterOf(q)
	cursor := q.Get("cursor")
	v := entriesView{Filter: f, Paged: cursor != "", Entries: []restarea.Entry{}}
	limit := listSize
	if !f.Empty() {
		limit = restarea.MaxPageLimit
	}
	var next *string
	for range scanPages {
		page, err := s.admin.ListEntries(r.Context(), restarea.ListOptions{Cursor: cursor, Limit: limit})
		if err != nil {
			s.fail(w, r, sess, err)
			return
		}
		v.Scanned += len(page.Entries)
		for _, e := range page.Entries {
			if f.match(e) {
				v.Entries = append(v.Entries, displayed(e))
			}
		}
		next = page.NextCursor
		if next == nil || len(v.Entries) >= listSize {
			break
		}
		cursor = *next
	}
	if next != nil {
		nq := f.query()
		nq.Set("cursor", *next)
		v.Next = Prefix + "/entries?" + nq.Encode()
	}
	s.render(w, r, http.StatusOK, "entries", view{Title: "Entries", Nav: "entries", CSRF: sess.csrf, Notice: doneNotice(q.Get("done")), Data: v})
}

// findEntry looks for id among the newest entries.
func (s *server) findEntry(r *http.Request, id string) (restarea.Entry, bool, error) {
	cursor := ""
	for range findPages {
		page, err := s.admin.ListEntries(r.Context(), restarea.ListOptions{Cursor: cursor, Limit: restarea.MaxPageLimit})
		if err != nil {
			return restarea.Entry{}, false, err
		}
		for _, e := range page.Entries {
			if strings.EqualFold(e.ID, id) {
				return e, true, nil
			}
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	return restarea.Entry{}, false, nil
}

// entryPage answers the entry of the {id} path, or a 404 page.
func (s *server) entryFor(w http.ResponseWriter, r *http.Request, sess session) (restarea.Entry, bool) {
	id := r.PathValue("id")
	e, ok, err := s.findEntry(r, id)
	if err != nil {
		s.fail(w, r, sess, err)
		return e, false
	}
	if !ok {
		s.render(w, r, http.StatusNotFound, "message", view{Title: "No such entry", Nav: "entries", CSRF: sess.csrf,
			Data: "No stored entry has this id among the newest ones: it was deleted, has expired, or never existed."})
		return e, false
	}
	return e, true
}

// entry is GET /admin/entries/{id}.
func (s *server) entry(w http.ResponseWriter, r *http.Request, sess session) {
	e, ok := s.entryFor(w, r, sess)
	if !ok {
		return
	}
	s.render(w, r, http.StatusOK, "entry", view{Title: "Entry " + e.ID, Nav: "entries", CSRF: sess.csrf, Notice: doneNotice(r.URL.Query().Get("done")), Data: displayed(e)})
}

// confirmView is the data of a "Really …?" page.
type confirmView struct {
	Verb, Question, Action, Cancel string
	Entry                          *restarea.Entry
	Member                         *restarea.Member
	Danger                         bool
}

var entryVerbs = map[string]string{"hide": "Hide", "unhide": "Unhide", "delete": "Delete"}

// confirmEntry is GET /admin/entries/{id}/{action}: the confirmation step
// of hide, unhide and delete.
func (s *server) confirmEntry(w http.ResponseWriter, r *http.Request, sess session) {
	action := r.PathValue("action")
	verb, known := entryVerbs[action]
	if !known {
		s.notFound(w, r)
		return
	}
	e, ok := s.entryFor(w, r, sess)
	if !ok {
		return
	}
	question := map[string]string{
		"hide":   "Really hide this entry? It disappears from the public pages, the API and MCP until it is unhidden.",
		"unhide": "Really unhide this entry? It becomes public again.",
		"delete": "Really delete this entry? Its text is erased for good; only a tombstone of its request_id is kept, so a replay is answered 410.",
	}[action]
	e = displayed(e)
	s.render(w, r, http.StatusOK, "confirm", view{Title: verb + " entry?", Nav: "entries", CSRF: sess.csrf, Data: confirmView{
		Verb: verb, Question: question, Action: Prefix + "/entries/" + e.ID + "/" + action,
		Cancel: Prefix + "/entries/" + e.ID, Entry: &e, Danger: action == "delete",
	}})
}

// changeEntry is POST /admin/entries/{id}/{action}.
func (s *server) changeEntry(w http.ResponseWriter, r *http.Request, sess session) {
	id := r.PathValue("id")
	var err error
	done := ""
	switch r.PathValue("action") {
	case "hide":
		_, err = s.admin.HideEntry(r.Context(), id)
		done = "hidden"
	case "unhide":
		_, err = s.admin.UnhideEntry(r.Context(), id)
		done = "unhidden"
	case "delete":
		err = s.admin.DeleteEntry(r.Context(), id)
		done = "deleted"
	default:
		s.notFound(w, r)
		return
	}
	if err != nil {
		s.fail(w, r, sess, err)
		return
	}
	s.log.Info("console: entry "+done, "id", id, "session", sessionLabel(sess))
	if done == "deleted" {
		http.Redirect(w, r, Prefix+"/entries?done=deleted", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, Prefix+"/entries/"+url.PathEscape(id)+"?done="+done, http.StatusSeeOther)
}

// doneNotice turns the done parameter of a redirect after an action into
// its message. Only known values are shown: nothing from the address is
// echoed.
func doneNotice(done string) string {
	return map[string]string{
		"hidden":      "Hidden: the entry no longer appears in public.",
		"unhidden":    "Unhidden: the entry is public again.",
		"deleted":     "Deleted: the entry's text is erased; a replay of its request_id gets 410.",
		"saved":       "Settings saved: every node enforces them once the change is applied.",
		"transferred": "Leadership transfer requested.",
		"removed":     "Member removed from the cluster.",
	}[done]
}

// displayed returns e as the console shows it: invisible characters as
// visible markers (restarea.ShowInvisible), so an operator deciding on an
// entry sees what a model reading it reads. Display only: the entry and
// every action on it are unchanged.
func displayed(e restarea.Entry) restarea.Entry {
	e.Title = restarea.ShowInvisible(e.Title)
	e.Body = restarea.ShowInvisible(e.Body)
	e.Actor.Name = restarea.ShowInvisible(e.Actor.Name)
	e.Actor.Model = restarea.ShowInvisible(e.Actor.Model)
	e.Actor.Trigger = restarea.ShowInvisible(e.Actor.Trigger)
	return e
}
