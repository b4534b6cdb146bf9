package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/restarea/restarea"
)

// settings is GET /admin/settings.
func (s *server) settings(w http.ResponseWriter, r *http.Request, sess session) {
	st, err := s.admin.Settings(r.Context())
	if err != nil {
		s.fail(w, r, sess, err)
		return
	}
	s.render(w, r, http.StatusOK, "settings", view{Title: "Settings", Nav: "settings", CSRF: sess.csrf, Notice: doneNotice(r.URL.Query().Get("done")), Data: st})
}

// saveSettings is POST /admin/settings. The page has two forms: the
// writes switch (writes_disabled) and the limits (both of them); a patch
// carries what the form sent and nothing else, as PUT
// /api/v1/admin/settings does.
func (s *server) saveSettings(w http.ResponseWriter, r *http.Request, sess session) {
	var patch restarea.SettingsPatch
	form := r.PostForm
	if v := form.Get("writes_disabled"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.fail(w, r, sess, restarea.Errorf(restarea.CodeInvalidRequest, "writes_disabled must be true or false"))
			return
		}
		patch.WritesDisabled = &b
	}
	if form.Has("per_source_count") || form.Has("global_count") {
		per, err := formLimit(form.Get("per_source_count"), form.Get("per_source_window"), "per_source_limit")
		if err != nil {
			s.fail(w, r, sess, err)
			return
		}
		global, err := formLimit(form.Get("global_count"), form.Get("global_window"), "global_limit")
		if err != nil {
			s.fail(w, r, sess, err)
			return
		}
		patch.PerSourceLimit, patch.GlobalLimit = &per, &global
	}
	if err := patch.Validate(); err != nil {
		s.fail(w, r, sess, err)
		return
	}
	st, err := s.admin.UpdateSettings(r.Context(), patch)
	if err != nil {
		s.fail(w, r, sess, err)
		return
	}
	s.log.Info("console: settings changed", "writes_disabled", st.WritesDisabled,
		"per_source_limit", st.PerSourceLimit.String(), "global_limit", st.GlobalLimit.String(), "session", sessionLabel(sess))
	http.Redirect(w, r, Prefix+"/settings?done=saved", http.StatusSeeOther)
}

// formLimit reads a limit's two fields; Limit.Validate checks the range.
func formLimit(count, window, field string) (restarea.Limit, error) {
	c, err := strconv.Atoi(strings.TrimSpace(count))
	if err != nil {
		return restarea.Limit{}, restarea.Errorf(restarea.CodeInvalidRequest, "%s.count must be a whole number", field)
	}
	wnd, err := strconv.Atoi(strings.TrimSpace(window))
	if err != nil {
		return restarea.Limit{}, restarea.Errorf(restarea.CodeInvalidRequest, "%s.window_seconds must be a whole number", field)
	}
	l := restarea.Limit{Count: c, WindowSeconds: wnd}
	return l, l.Validate(field)
}
