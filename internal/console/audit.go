package console

import (
	"net/http"
	"net/url"

	"github.com/restarea/restarea"
)

// auditPageSize is how many records one screen of the audit trail shows.
const auditPageSize = 50

// auditView is what the audit page's template gets.
type auditView struct {
	Records []restarea.AuditRecord
	// Paged is true past the first screen; Next is the address of the
	// following one, "" after the oldest record.
	Paged bool
	Next  string
}

// audit is GET /admin/audit: the replicated audit trail, newest first,
// read through AdminService.ListAudit as GET /api/v1/admin/audit does.
func (s *server) audit(w http.ResponseWriter, r *http.Request, sess session) {
	cursor := r.URL.Query().Get("cursor")
	page, err := s.admin.ListAudit(r.Context(), restarea.ListOptions{Cursor: cursor, Limit: auditPageSize})
	if err != nil {
		s.fail(w, r, sess, err)
		return
	}
	v := auditView{Records: page.Records, Paged: cursor != ""}
	if page.NextCursor != nil {
		v.Next = Prefix + "/audit?" + url.Values{"cursor": {*page.NextCursor}}.Encode()
	}
	s.render(w, r, http.StatusOK, "audit", view{Title: "Audit", Nav: "audit", CSRF: sess.csrf, Data: v})
}
