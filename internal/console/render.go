package console

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
	"github.com/restarea/restarea/internal/mdtext"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static/console.css
var consoleCSS []byte

// pages holds one template per page: the layout plus the page's "content".
type pages map[string]*template.Template

var pageNames = []string{"login", "entries", "entry", "confirm", "settings", "cluster", "audit", "message"}

var templateFuncs = template.FuncMap{
	"when":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"iso":     func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"state":   entryState,
	"short":   short,
	"excerpt": excerpt,
}

// short cuts s to n runes, marking the cut.
func short(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// excerpt shows the start of a body as the text a reader sees, not as
// Markdown source. A body with no text at all (a rule, raw HTML only)
// shows its source, so that the link it labels is never empty.
func excerpt(body string, n int) string {
	if s := mdtext.Excerpt(body, n); s != "" {
		return s
	}
	return short(body, n)
}

// mustParsePages parses the embedded templates; a failure is a build
// defect every test exposes.
func mustParsePages() pages {
	base := template.Must(template.New("layout.html").Funcs(templateFuncs).ParseFS(templateFiles, "templates/layout.html"))
	p := pages{}
	for _, name := range pageNames {
		p[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFiles, "templates/"+name+".html"))
	}
	return p
}

// entryState is what the console calls an entry's state. Deleted entries
// are no longer listed (only their tombstone is kept), so a listed entry
// is either public or hidden.
func entryState(e restarea.Entry) string {
	if e.Visible {
		return "visible"
	}
	return "hidden"
}

// view is what every page's template gets.
type view struct {
	Title string
	// Nav names the section the page belongs to ("" on the sign-in page,
	// which shows no navigation).
	Nav  string
	CSRF string
	// Notice and Problem are a success message and an error message.
	Notice, Problem string
	Data            any
}

// render writes page with status; a template failure is logged and
// answered 500 without partial output.
func (s *server) render(w http.ResponseWriter, r *http.Request, status int, page string, v view) {
	var buf bytes.Buffer
	if err := s.pages[page].Execute(&buf, v); err != nil {
		s.log.Error("console: render failed", "page", page, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(buf.Bytes())
	}
}

// message answers a page that only says something (refusals, failures).
// It shows the navigation only to a signed-in operator.
func (s *server) message(w http.ResponseWriter, r *http.Request, status int, title, text string) {
	v := view{Title: title, Data: text}
	if sess, ok := s.currentSession(r); ok {
		v.Nav, v.CSRF = "message", sess.csrf
	}
	s.render(w, r, status, "message", v)
}

// fail answers a service error: its status, and its message (the
// service's words describe the request, never secrets).
func (s *server) fail(w http.ResponseWriter, r *http.Request, sess session, err error) {
	code := restarea.ErrorCode(err)
	status := httpx.Status(code)
	if status >= 500 {
		s.log.Warn("console: service call failed", "path", r.URL.Path, "err", err)
	}
	if secs := restarea.RetryAfterSeconds(err); secs > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	s.render(w, r, status, "message", view{Title: "Failed: " + http.StatusText(status), Nav: "message", CSRF: sess.csrf, Data: restarea.ErrorMessage(err)})
}

// css serves the console's additions to the public stylesheet.
func (s *server) css(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/css; charset=utf-8")
	h.Set("Cache-Control", "public, max-age=300")
	w.Write(consoleCSS)
}

// notFound answers every path under /admin/ no page claims.
func (s *server) notFound(w http.ResponseWriter, r *http.Request) {
	s.message(w, r, http.StatusNotFound, "Not found", "No console page has this address.")
}
