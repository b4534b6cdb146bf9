package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/restarea/restarea/internal/httpx"
)

// loginForm is GET /admin/login. The form is bound to a nonce in a
// short-lived cookie, so a sign-in cannot be posted from another site's
// page either (login CSRF).
func (s *server) loginForm(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.currentSession(r); ok {
		http.Redirect(w, r, Prefix+"/entries", http.StatusSeeOther)
		return
	}
	s.renderLogin(w, r, http.StatusOK, "")
}

// renderLogin shows the sign-in form with a fresh nonce.
func (s *server) renderLogin(w http.ResponseWriter, r *http.Request, status int, problem string) {
	var nonce [16]byte
	rand.Read(nonce[:])
	http.SetCookie(w, s.cookie(r, loginCookie, base64.RawURLEncoding.EncodeToString(nonce[:]), int(loginTTL.Seconds())))
	s.render(w, r, status, "login", view{Title: "Sign in", CSRF: s.keys.csrfFor("login", nonce[:]), Problem: problem, Data: ttlText(s.ttl)})
}

// loginCSRFValid checks the sign-in form's CSRF field against its cookie.
func (s *server) loginCSRFValid(r *http.Request) bool {
	c, err := r.Cookie(loginCookie)
	if err != nil {
		return false
	}
	nonce, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil || len(nonce) != 16 {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.keys.csrfFor("login", nonce))) == 1
}

// login is POST /admin/login. A wrong token spends one attempt of the
// source's budget in the admin API's throttle (429 with Retry-After past
// it, without comparing); a right one gives it back. The token itself is
// never logged, echoed or put in a URL.
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	if reason, refused := httpx.CrossSite(r, s.origins); refused {
		s.refusals.Log(r.Context(), slog.LevelWarn, "console: cross-site sign-in refused", "reason", reason)
		s.message(w, r, http.StatusForbidden, "Refused", "This form was sent from another site.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.renderLogin(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	if !s.loginCSRFValid(r) {
		s.renderLogin(w, r, http.StatusForbidden, "The sign-in form expired or came from elsewhere. Try again with this one.")
		return
	}
	token := r.PostForm.Get("token")
	if token == "" {
		s.renderLogin(w, r, http.StatusBadRequest, "Enter the admin token.")
		return
	}
	source := httpx.SourceOf(r, s.proxies, s.v6bits)
	if wait := s.throttle.Take(source); wait > 0 {
		secs := int((wait + 999_999_999) / 1_000_000_000)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		s.refusals.Log(r.Context(), slog.LevelWarn, "console: sign-in throttled", "source", source)
		s.renderLogin(w, r, http.StatusTooManyRequests, "Too many failed sign-ins from this address: wait "+strconv.Itoa(secs)+" s and try again.")
		return
	}
	if !s.keys.tokenValid(token) {
		s.refusals.Log(r.Context(), slog.LevelWarn, "console: sign-in refused: wrong token", "source", source)
		s.renderLogin(w, r, http.StatusUnauthorized, "That is not the admin token.")
		return
	}
	s.throttle.Refund(source)
	sess, value := s.keys.newSession(s.now().Add(s.ttl))
	http.SetCookie(w, s.cookie(r, sessionCookie, value, int(s.ttl.Seconds())))
	http.SetCookie(w, s.cookie(r, loginCookie, "", -1))
	s.log.Info("console: signed in", "source", source, "session", sessionLabel(sess))
	http.Redirect(w, r, Prefix+"/entries", http.StatusSeeOther)
}

// logout is POST /admin/logout: the browser forgets its cookie. Sessions
// are stateless, so a copy of the cookie stays valid until it expires;
// changing the token ends every session at once.
func (s *server) logout(w http.ResponseWriter, r *http.Request, sess session) {
	http.SetCookie(w, s.cookie(r, sessionCookie, "", -1))
	s.log.Info("console: signed out", "session", sessionLabel(sess))
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}

// sessionLabel names a session in logs without revealing its cookie: a
// digest prefix of its id.
func sessionLabel(sess session) string {
	sum := sha256.Sum256(sess.id[:])
	return hex.EncodeToString(sum[:4])
}

// ttlText says how long a session lasts, for the sign-in page.
func ttlText(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + " h"
	case d >= time.Minute:
		return strconv.Itoa(int(d/time.Minute)) + " min"
	}
	return strconv.Itoa(int(d/time.Second)) + " s"
}
