package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/restarea/restarea"
)

// MinAdminTokenBytes is the shortest admin token a node accepts at start;
// a shorter one cannot be right, so NewAdmin refuses it.
const MinAdminTokenBytes = 16

// ErrUnreachable is in the chain of an Admin error when no server gave an
// HTTP answer (refused, reset, timed out) within the attempts and the
// deadline.
var ErrUnreachable = errors.New("no server answered")

// ErrOutcomeUnknown is in the chain of an Admin error when a change that
// is not safe to repeat (a leadership transfer, a member removal) was sent
// but its answer was lost: it may or may not have taken effect.
var ErrOutcomeUnknown = errors.New("the request was sent but its answer was lost; it may or may not have taken effect")

// Admin calls the operators' API (/api/v1/admin/ and the full view of
// /api/v1/cluster) with a bearer token. It is safe for concurrent use.
//
// Failover rule: every request moves to the next server when a
// connection to the current one cannot be made (nothing was sent). Reads
// and the changes that are idempotent — hide, unhide, delete and a
// settings patch, which leave the same state when applied twice — also
// move on after a lost answer (reset, timeout, a cut body) and after 503,
// since repeating them is harmless. A leadership transfer and a member
// removal are not repeated once sent: a second transfer would move the
// leadership again, and a second removal would answer 404 for a removal
// that worked; a lost answer to them is ErrOutcomeUnknown. Other answers
// (2xx, 4xx, 5xx but 503) are final.
type Admin struct {
	c *Client
}

// NewAdmin returns an admin client for the servers of opts, sending token.
// Options.Journal is not used. The HTTP client never follows redirects,
// so the token goes only to the servers given.
func NewAdmin(token string, opts Options) (*Admin, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return nil, errors.New("client: an admin token is required")
	}
	if len(token) < MinAdminTokenBytes {
		return nil, fmt.Errorf("client: the admin token is %d bytes; nodes accept only tokens of at least %d", len(token), MinAdminTokenBytes)
	}
	if strings.ContainsAny(token, "\r\n") {
		return nil, errors.New("client: the admin token must be one line")
	}
	if !opts.AllowPlainHTTP {
		for _, srv := range opts.Servers {
			if err := checkPlainHTTP(strings.TrimSpace(srv)); err != nil {
				return nil, err
			}
		}
	}
	base := opts.transport()
	hc := &http.Client{}
	if opts.HTTPClient != nil {
		*hc = *opts.HTTPClient
		base = http.DefaultTransport
		if hc.Transport != nil {
			base = hc.Transport
		}
	}
	hc.Transport = bearer{token: token, base: base, allowPlain: opts.AllowPlainHTTP}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	opts.HTTPClient, opts.Journal = hc, nil
	c, err := New(opts)
	if err != nil {
		return nil, err
	}
	return &Admin{c: c}, nil
}

// bearer adds the Authorization header to every request, and refuses to
// send it in clear beyond loopback unless allowed: the last guard, whatever
// URL a request was built from.
type bearer struct {
	token      string
	base       http.RoundTripper
	allowPlain bool
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if !b.allowPlain {
		if err := checkPlainHTTP(r.URL.String()); err != nil {
			if r.Body != nil {
				r.Body.Close() // a RoundTripper closes the body, even on error
			}
			return nil, err
		}
	}
	r = r.Clone(r.Context()) // a RoundTripper must not change its request
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// Servers returns the server URLs the client uses, in order.
func (a *Admin) Servers() []string { return a.c.Servers() }

// MemberList is the answer of GET /api/v1/admin/cluster/members.
type MemberList struct {
	Members  []restarea.Member `json:"members"`
	LeaderID string            `json:"leader_id"`
}

// DeleteResult is the answer of a delete.
type DeleteResult struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// RemoveResult is the answer of a member removal.
type RemoveResult struct {
	ID      string `json:"id"`
	Removed bool   `json:"removed"`
}

// ListEntries returns one page of every stored entry, hidden ones
// included, with request_id, newest first.
func (a *Admin) ListEntries(ctx context.Context, opts restarea.ListOptions) (restarea.EntryPage, error) {
	var p restarea.EntryPage
	err := a.call(ctx, http.MethodGet, "/api/v1/admin/entries", listQuery(opts), nil, true, &p)
	return p, err
}

// ListAudit returns one page of the replicated audit trail of operator
// actions, newest first (GET /api/v1/admin/audit).
func (a *Admin) ListAudit(ctx context.Context, opts restarea.ListOptions) (restarea.AuditPage, error) {
	var p restarea.AuditPage
	err := a.call(ctx, http.MethodGet, "/api/v1/admin/audit", listQuery(opts), nil, true, &p)
	return p, err
}

// Entries iterates over the pages of the entry list from opts.Cursor to
// the last page; iteration stops after yielding an error.
func (a *Admin) Entries(ctx context.Context, opts restarea.ListOptions) iter.Seq2[restarea.EntryPage, error] {
	return func(yield func(restarea.EntryPage, error) bool) {
		seen := map[string]bool{}
		for {
			page, err := a.ListEntries(ctx, opts)
			if err != nil {
				yield(restarea.EntryPage{}, err)
				return
			}
			if !yield(page, nil) || page.NextCursor == nil || *page.NextCursor == "" {
				return
			}
			// The cursor is opaque, but a server that hands back one it
			// already gave would have us loop forever.
			if seen[*page.NextCursor] {
				yield(restarea.EntryPage{}, errors.New("the server repeated an entry cursor"))
				return
			}
			seen[*page.NextCursor] = true
			opts.Cursor = *page.NextCursor
		}
	}
}

// Entry returns the stored entry id (hidden ones included, with
// request_id), or a *restarea.Error with CodeNotFound when no stored entry
// has it (a deleted entry keeps only a tombstone). The admin API has no
// lookup by id, so this pages through the list: one request per
// restarea.MaxPageLimit entries, newest first.
func (a *Admin) Entry(ctx context.Context, id string, cons restarea.Consistency) (restarea.Entry, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return restarea.Entry{}, restarea.Errorf(restarea.CodeInvalidRequest, "an entry id is required")
	}
	for page, err := range a.Entries(ctx, restarea.ListOptions{Limit: restarea.MaxPageLimit, Consistency: cons}) {
		if err != nil {
			return restarea.Entry{}, err
		}
		for _, e := range page.Entries {
			if strings.EqualFold(e.ID, id) {
				return e, nil
			}
		}
	}
	return restarea.Entry{}, restarea.Errorf(restarea.CodeNotFound, "no stored entry has id %q", id)
}

// HideEntry hides an entry from public reads; hiding a hidden entry is a
// no-op.
func (a *Admin) HideEntry(ctx context.Context, id string) (restarea.Entry, error) {
	var e restarea.Entry
	err := a.changeEntry(ctx, id, "hide", &e)
	return e, err
}

// UnhideEntry makes a hidden entry public again.
func (a *Admin) UnhideEntry(ctx context.Context, id string) (restarea.Entry, error) {
	var e restarea.Entry
	err := a.changeEntry(ctx, id, "unhide", &e)
	return e, err
}

// DeleteEntry erases an entry's text and keeps a tombstone for its
// request_id.
func (a *Admin) DeleteEntry(ctx context.Context, id string) (DeleteResult, error) {
	var d DeleteResult
	err := a.changeEntry(ctx, id, "delete", &d)
	return d, err
}

// changeEntry posts action (hide, unhide, delete) on entry id: all three
// are idempotent, so they are repeated on lost answers.
func (a *Admin) changeEntry(ctx context.Context, id, action string, out any) error {
	id = strings.TrimSpace(id)
	if id == "" {
		return restarea.Errorf(restarea.CodeInvalidRequest, "an entry id is required")
	}
	return a.call(ctx, http.MethodPost, "/api/v1/admin/entries/"+url.PathEscape(id)+"/"+action, nil, nil, true, out)
}

// Settings returns the settings in force.
func (a *Admin) Settings(ctx context.Context) (restarea.Settings, error) {
	var s restarea.Settings
	err := a.call(ctx, http.MethodGet, "/api/v1/admin/settings", nil, nil, true, &s)
	return s, err
}

// UpdateSettings sends patch (only the members it carries change) and
// returns the settings in force after it. The patch is checked before
// anything is sent.
func (a *Admin) UpdateSettings(ctx context.Context, patch restarea.SettingsPatch) (restarea.Settings, error) {
	if err := patch.Validate(); err != nil {
		return restarea.Settings{}, err
	}
	var s restarea.Settings
	err := a.call(ctx, http.MethodPut, "/api/v1/admin/settings", nil, patch, true, &s)
	return s, err
}

// Members returns the cluster's members with their addresses, and the
// leader's id.
func (a *Admin) Members(ctx context.Context) (MemberList, error) {
	var m MemberList
	err := a.call(ctx, http.MethodGet, "/api/v1/admin/cluster/members", nil, nil, true, &m)
	return m, err
}

// RemoveMember removes server id from the cluster. It is not repeated
// once sent (see Admin).
func (a *Admin) RemoveMember(ctx context.Context, id string) (RemoveResult, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return RemoveResult{}, restarea.Errorf(restarea.CodeInvalidRequest, "a member id is required")
	}
	var r RemoveResult
	err := a.call(ctx, http.MethodDelete, "/api/v1/admin/cluster/members/"+url.PathEscape(id), nil, nil, false, &r)
	return r, err
}

// TransferLeadership hands leadership to member to, or to the most
// up-to-date other voter when to is empty, and returns the status of the
// node that answered. It is not repeated once sent (see Admin).
func (a *Admin) TransferLeadership(ctx context.Context, to string) (restarea.ClusterStatus, error) {
	var body any
	if to = strings.TrimSpace(to); to != "" {
		body = struct {
			ID string `json:"id"`
		}{to}
	}
	var st restarea.ClusterStatus
	err := a.call(ctx, http.MethodPost, "/api/v1/admin/cluster/leadership-transfer", nil, body, false, &st)
	return st, err
}

// FinalizeUpgrade asks the cluster to raise its cluster version to the
// newest every member knows (POST /api/v1/admin/cluster/finalize-upgrade).
// A member that runs an older release makes it a *restarea.Error with
// CodeConflict naming the member. Finalizing twice is harmless, so it is
// repeated on failover like a read.
func (a *Admin) FinalizeUpgrade(ctx context.Context) (restarea.UpgradeResult, error) {
	var r restarea.UpgradeResult
	err := a.call(ctx, http.MethodPost, "/api/v1/admin/cluster/finalize-upgrade", nil, nil, true, &r)
	return r, err
}

// ClusterStatus returns GET /api/v1/cluster of the first server that
// answers: that node's view, members' addresses and URLs included. That
// route is public and answers a wrong token with the public view (no
// addresses) rather than 401; ClusterStatus turns such an answer into a
// *restarea.Error with CodeUnauthorized.
func (a *Admin) ClusterStatus(ctx context.Context) (restarea.ClusterStatus, error) {
	var st restarea.ClusterStatus
	if err := a.call(ctx, http.MethodGet, "/api/v1/cluster", nil, nil, true, &st); err != nil {
		return st, err
	}
	if publicView(st) {
		return st, restarea.Errorf(restarea.CodeUnauthorized, "the admin token was not accepted: /api/v1/cluster answered its public view, without addresses")
	}
	return st, nil
}

// publicView reports whether st is the public form of the status: every
// member lacks its raft address, which the full view always has.
func publicView(st restarea.ClusterStatus) bool {
	for _, m := range st.Members {
		if m.RaftAddr != "" {
			return false
		}
	}
	return len(st.Members) > 0
}

// call sends one API request with the failover rule of Admin: repeatable
// says whether the request may be sent again after it may have arrived.
// Errors are *restarea.Error for the server's refusals, and wrap
// ErrUnreachable or ErrOutcomeUnknown otherwise.
func (a *Admin) call(ctx context.Context, method, path string, q url.Values, body any, repeatable bool, out any) error {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, a.c.opts.Deadline)
	defer cancel()
	deadline, _ := ctx.Deadline()
	log := a.c.opts.Logger.With("method", method, "path", path)
	var last error
	for attempt := 1; attempt <= a.c.opts.MaxAttempts; attempt++ {
		base := a.c.server()
		ans := a.c.do(ctx, base, method, path, q, raw)
		var wait time.Duration
		switch {
		case ans.lost != nil:
			if !repeatable && !notSent(ans.lost) {
				return fmt.Errorf("%s %s on %s: %w (%v)", method, path, base, ErrOutcomeUnknown, ans.lost)
			}
			last = fmt.Errorf("%s: %w: %v", base, ErrUnreachable, ans.lost)
		case ans.err == nil:
			return decodeData(ans.data, out)
		case ans.status == http.StatusServiceUnavailable && repeatable:
			last = fmt.Errorf("%s: %w", base, withCode(ans))
			wait = ans.retryAfter
		default:
			return withCode(ans)
		}
		log.Info("admin request failed; trying the next server", "server", base, "attempt", attempt, "err", last)
		a.c.rotate(base)
		if attempt == a.c.opts.MaxAttempts || ctx.Err() != nil {
			break
		}
		// A full round over the servers failed: wait before the next, as
		// asked or with backoff, rather than spin on a cluster that is
		// down or electing.
		if attempt%len(a.c.servers) == 0 {
			if wait == 0 {
				wait = backoff(attempt/len(a.c.servers), a.c.opts.BaseBackoff, a.c.opts.MaxBackoff)
			}
			if !pause(ctx, wait, deadline) {
				break
			}
		}
	}
	if last == nil {
		last = fmt.Errorf("%w: %v", ErrUnreachable, ctx.Err())
	}
	return fmt.Errorf("%s %s: %w", method, path, last)
}

// withCode returns the refusal of ans with its code always set: an answer
// that is not one of ours (a proxy's) gets the code of its HTTP status.
func withCode(ans answer) *restarea.Error {
	e := *ans.err
	if e.Code == "" {
		e.Code = codeOfStatus(ans.status)
	}
	return &e
}

func codeOfStatus(status int) restarea.Code {
	switch {
	case status == http.StatusUnauthorized:
		return restarea.CodeUnauthorized
	case status == http.StatusForbidden:
		return restarea.CodeForbidden
	case status == http.StatusNotFound:
		return restarea.CodeNotFound
	case status == http.StatusTooManyRequests:
		return restarea.CodeRateLimited
	case status == http.StatusServiceUnavailable:
		return restarea.CodeUnavailable
	case status >= 500:
		return restarea.CodeInternal
	}
	return restarea.CodeInvalidRequest
}

// notSent reports whether err happened before the request left: the
// connection could not be made (refused, no route, a name that does not
// resolve).
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func listQuery(opts restarea.ListOptions) url.Values {
	q := readQuery(opts.Consistency)
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	return q
}
