package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"log/slog"
	"net/http"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
)

// Cookie names. The session cookie is scoped to /admin, so the public
// pages never receive it.
const (
	sessionCookie = "restarea_admin"
	loginCookie   = "restarea_admin_login"
	cookiePath    = Prefix
	// loginTTL is how long a sign-in form may wait before it is sent.
	loginTTL = 30 * time.Minute
	// maxFormBytes caps a console form: the largest is a few hundred bytes.
	maxFormBytes = 16 << 10
)

// keys are the MAC keys of sessions and CSRF tokens. Both derive from the
// admin token, so every node with the same token accepts the same cookie
// (no shared state behind a load balancer) and a new token makes every
// old cookie and form worthless.
type keys struct {
	session, csrf []byte
	token         [sha256.Size]byte // the token's digest, compared at sign-in
}

func deriveKeys(token string) keys {
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, []byte(token))
		m.Write([]byte(label))
		return m.Sum(nil)
	}
	return keys{
		session: derive("restarea console session v1"),
		csrf:    derive("restarea console csrf v1"),
		token:   sha256.Sum256([]byte(token)),
	}
}

// session is a signed-in operator: the session's random id and the CSRF
// token every form of it carries.
type session struct {
	id      [16]byte
	expires time.Time
	csrf    string
}

const (
	sidLen    = 16
	cookieLen = 8 + sidLen + sha256.Size
)

func (k keys) mac(parts ...[]byte) []byte {
	m := hmac.New(sha256.New, k.session)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// csrfFor is the CSRF token bound to a session id (or a sign-in form's
// nonce, under another label).
func (k keys) csrfFor(label string, id []byte) string {
	m := hmac.New(sha256.New, k.csrf)
	m.Write([]byte(label))
	m.Write(id)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// newSession makes a session expiring at exp and the cookie value that
// carries it: expiry, id, and their MAC.
func (k keys) newSession(exp time.Time) (session, string) {
	var sess session
	rand.Read(sess.id[:])
	sess.expires = time.Unix(exp.Unix(), 0)
	sess.csrf = k.csrfFor("session", sess.id[:])
	b := binary.BigEndian.AppendUint64(nil, uint64(exp.Unix()))
	b = append(b, sess.id[:]...)
	b = append(b, k.mac(b)...)
	return sess, base64.RawURLEncoding.EncodeToString(b)
}

// parseSession checks a cookie value: well formed, MAC valid, not expired.
func (k keys) parseSession(v string, now time.Time) (session, bool) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) != cookieLen {
		return session{}, false
	}
	body, sum := b[:8+sidLen], b[8+sidLen:]
	if !hmac.Equal(sum, k.mac(body)) {
		return session{}, false
	}
	exp := time.Unix(int64(binary.BigEndian.Uint64(body[:8])), 0)
	if !now.Before(exp) {
		return session{}, false
	}
	var sess session
	copy(sess.id[:], body[8:])
	sess.expires = exp
	sess.csrf = k.csrfFor("session", sess.id[:])
	return sess, true
}

// tokenValid compares a submitted token with the configured one through
// their digests, in constant time whatever their lengths.
func (k keys) tokenValid(token string) bool {
	got := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(got[:], k.token[:]) == 1
}

// cookie returns a console cookie: HttpOnly, SameSite=Strict, scoped to
// /admin, Secure over https or behind an https public URL.
func (s *server) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: name, Value: value, Path: cookiePath, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: s.secure || r.TLS != nil,
	}
}

// currentSession returns the request's valid session, if any.
func (s *server) currentSession(r *http.Request) (session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, false
	}
	return s.keys.parseSession(c.Value, s.now())
}

// handlerFunc is a console page: it runs only with a valid session.
type handlerFunc func(w http.ResponseWriter, r *http.Request, sess session)

// session serves a GET page to a signed-in operator and sends anyone else
// to the sign-in form.
func (s *server) session(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, ok := s.currentSession(r)
		if !ok {
			http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
			return
		}
		// The audit trail names the operator's address, as it does for
		// the admin API.
		source := httpx.SourceOf(r, s.proxies, s.v6bits)
		h(w, r.WithContext(restarea.WithOrigin(r.Context(), source)), sess)
	})
}

// post serves a form submission only when it is not cross-site
// (httpx.CrossSite), carries a valid session and carries that session's
// CSRF token; anything else is 403 and nothing is changed.
func (s *server) post(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reason, refused := httpx.CrossSite(r, s.origins); refused {
			s.refusals.Log(r.Context(), slog.LevelWarn, "console: cross-site post refused", "path", r.URL.Path, "reason", reason)
			s.message(w, r, http.StatusForbidden, "Refused", "This form was sent from another site.")
			return
		}
		sess, ok := s.currentSession(r)
		if !ok {
			s.message(w, r, http.StatusForbidden, "Sign in first", "The session is missing or has expired: sign in again, then repeat the action.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			s.message(w, r, http.StatusBadRequest, "Bad form", "The form could not be read.")
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(sess.csrf)) != 1 {
			s.refusals.Log(r.Context(), slog.LevelWarn, "console: post without a valid CSRF token refused", "path", r.URL.Path)
			s.message(w, r, http.StatusForbidden, "Refused", "The form's CSRF token is missing or belongs to another session. Reload the page and try again.")
			return
		}
		// The audit trail names the operator's address, as it does for
		// the admin API.
		source := httpx.SourceOf(r, s.proxies, s.v6bits)
		h(w, r.WithContext(restarea.WithOrigin(r.Context(), source)), sess)
	})
}
