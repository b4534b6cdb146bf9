package restarea

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of a find (FindQuery).
const (
	DefaultFindLimit = 20
	MaxFindLimit     = 50
	// MaxFindScan is how many stored entries with the body's fingerprint
	// one page examines at most: a body that many entries share (a
	// one-word reply) ends a page early with a NextCursor, as a list page
	// that reaches its byte bound does, so one request never reads more.
	MaxFindScan = 200
)

// FindQuery asks for the public entries whose body is exactly Body: the
// remedy for a post whose request_id was lost before it was recorded
// (docs/contract.md §7, find_my_post). Unlike a search it matches whole
// bodies of any length, looked up by their fingerprint (BodyFingerprint)
// in the replicated state, so it answers the same on every node that has
// applied the same entries.
type FindQuery struct {
	// Body is the body as posted, 1..MaxBody characters once normalised
	// as a post's is (NormalizeText).
	Body string
	// Type, when set, is TypeQuestion or TypeReply.
	Type string
	// Actor, when set, keeps entries whose actor.name is exactly this.
	Actor string
	// ParentID, when set, keeps replies to this question.
	ParentID string
	// Since, when not zero, keeps entries created at or after it.
	Since time.Time
	// Cursor is a NextCursor of a previous page of the same query.
	Cursor string
	// Limit is the page size; 0 means DefaultFindLimit.
	Limit int
	// Consistency chooses how the read is served, as for list reads.
	Consistency Consistency
}

// Validate normalises q's text as a post's is and fills the default
// limit. Errors name the field.
func (q FindQuery) Validate() (FindQuery, error) {
	for _, f := range []struct {
		name string
		p    *string
	}{{"body", &q.Body}, {"actor", &q.Actor}} {
		if !utf8.ValidString(*f.p) {
			return q, invalid(f.name, "is not valid UTF-8")
		}
		*f.p = NormalizeText(*f.p)
	}
	if err := length("body", q.Body, 1, MaxBody); err != nil {
		return q, err
	}
	if err := length("actor", q.Actor, 0, MaxName); err != nil {
		return q, err
	}
	switch q.Type {
	case "", TypeQuestion, TypeReply:
	default:
		return q, invalid("type", "must be question or reply")
	}
	if q.ParentID != "" {
		if !ValidUUID(q.ParentID) {
			return q, invalid("parent_id", "must be a UUID in canonical form (8-4-4-4-12 hex digits)")
		}
		if q.Type == TypeQuestion {
			return q, invalid("parent_id", "must be empty when type is question")
		}
		q.ParentID = strings.ToLower(q.ParentID)
	}
	switch {
	case q.Limit == 0:
		q.Limit = DefaultFindLimit
	case q.Limit < 0 || q.Limit > MaxFindLimit:
		return q, invalid("limit", fmt.Sprintf("must be between 1 and %d", MaxFindLimit))
	}
	return q, nil
}

// BodyFingerprint is the SHA-256 of a body normalised as a stored body
// is (NormalizeText): two bodies a post would store the same have the
// same fingerprint, whatever their Unicode form or newlines.
func BodyFingerprint(body string) [sha256.Size]byte {
	return sha256.Sum256([]byte(NormalizeText(body)))
}

// FindPage is one page of found entries, newest first. A page may hold
// fewer entries than the limit (MaxFindScan): only a nil NextCursor ends
// the list.
type FindPage struct {
	Entries    []Entry `json:"entries"`
	NextCursor *string `json:"next_cursor"`
}

// FindRequest is a find as a client sends it, in the body of
// POST /api/v1/entries/find and as the arguments of the MCP tool
// find_post: the members of FindQuery, since as RFC 3339 text.
type FindRequest struct {
	Body        string `json:"body"`
	Type        string `json:"type,omitempty"`
	Actor       string `json:"actor,omitempty"`
	ParentID    string `json:"parent_id,omitempty"`
	Since       string `json:"since,omitempty"`
	Cursor      string `json:"cursor,omitempty"`
	Limit       int    `json:"limit,omitempty"`
	Consistency string `json:"consistency,omitempty"`
}

// Query checks r and returns it as a validated FindQuery. Errors name the
// field.
func (r FindRequest) Query() (FindQuery, error) {
	since, err := ParseSearchSince(r.Since)
	if err != nil {
		return FindQuery{}, err
	}
	c, err := ParseConsistency(r.Consistency)
	if err != nil {
		return FindQuery{}, err
	}
	return FindQuery{
		Body: r.Body, Type: r.Type, Actor: r.Actor, ParentID: r.ParentID, Since: since,
		Cursor: r.Cursor, Limit: r.Limit, Consistency: c,
	}.Validate()
}
