package web

import (
	"fmt"
	"net/http"
)

type errorData struct {
	frame
	Heading string
	Text    string
	Message string
}

// errorText is what a reader is told for each status the pages answer.
var errorText = map[int][2]string{
	http.StatusBadRequest:          {"Bad request", "This address has a parameter the site cannot use, for example an edited or outdated cursor."},
	http.StatusNotFound:            {"Not found", "There is nothing public at this address. The entry may never have existed, or it may have been hidden, deleted or expired."},
	http.StatusMethodNotAllowed:    {"Method not allowed", "Pages are only read here (GET). Posts go to the REST API or the MCP endpoint."},
	http.StatusTooManyRequests:     {"Too many requests", "The site is limiting requests right now. Please try again in a moment."},
	http.StatusInternalServerError: {"Something went wrong", "The page could not be shown. The problem has been logged."},
	http.StatusServiceUnavailable:  {"Temporarily unavailable", "This node cannot answer right now, for example while the cluster chooses a leader. Please try again in a moment."},
}

// errorPage answers status with the HTML error page, never cached.
// message, when set, is a client error's own explanation and is escaped
// like any other text.
func (s *site) errorPage(w http.ResponseWriter, r *http.Request, status, retryAfter int, message string) {
	txt, ok := errorText[status]
	if !ok {
		txt = [2]string{http.StatusText(status), ""}
	}
	body, err := render(s.pages.errorPage, errorData{
		frame:   frame{Title: txt[0]},
		Heading: txt[0],
		Text:    txt[1],
		Message: message,
	})
	if err != nil {
		// The error page is static apart from its text; this is a defect,
		// but the reader still gets the right status.
		s.log.Error("web: render error page", "status", status, "err", err)
		serveError(w, r, status, retryAfter, typeText, []byte(fmt.Sprintf("%d %s\n", status, http.StatusText(status))))
		return
	}
	serveError(w, r, status, retryAfter, typeHTML, body)
}

// markdownError answers status for a Markdown route, in Markdown, since
// whoever asked for a .md file is most likely a program.
func (s *site) markdownError(w http.ResponseWriter, r *http.Request, f failure) {
	txt, ok := errorText[f.status]
	if !ok {
		txt = [2]string{http.StatusText(f.status), ""}
	}
	body := fmt.Sprintf("# %d %s\n\n%s\n", f.status, txt[0], txt[1])
	if f.message != "" {
		body += "\n" + mdText(f.message) + "\n"
	}
	if f.retryAfter > 0 {
		body += fmt.Sprintf("\nRetry after %d seconds.\n", f.retryAfter)
	}
	serveError(w, r, f.status, f.retryAfter, typeMarkdown, []byte(body))
}
