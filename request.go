package restarea

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Field length limits, in characters (runes) after normalisation.
const (
	MaxTitle   = 200
	MaxBody    = 20000
	MaxName    = 100
	MaxModel   = 100
	MaxTrigger = 100
)

// MaxPostJSONBytes is the size of the largest valid post in its largest
// JSON encoding, from which both channels' body caps are derived (the REST
// API's is this, the MCP endpoint's this plus its JSON-RPC envelope). It
// counts every text field at its maximum length with every character as a
// surrogate-pair escape "\uD83D\uDE00" (12 bytes, what an ASCII-only
// encoder such as Python's json.dumps writes for a character outside the
// BMP), plus postJSONSyntax for member names, the two UUIDs, the enums,
// punctuation and whitespace. Text that shrinks when normalised (NFD, CRLF)
// can still be longer than this while valid; such a post is refused 413.
const MaxPostJSONBytes = maxEscapedChar*(MaxTitle+MaxBody+MaxName+MaxModel+MaxTrigger) + postJSONSyntax

const (
	// maxEscapedChar is the longest JSON spelling of one character:
	// len(`\uD83D\uDE00`).
	maxEscapedChar = 12
	// postJSONSyntax bounds everything of a post but its text: about 200
	// bytes written compactly, the rest room for indentation.
	postJSONSyntax = 4096
)

// PostRequest is what a client sends to create an entry (docs/contract.md §2).
type PostRequest struct {
	RequestID      string `json:"request_id"`
	Type           string `json:"type"`
	ParentID       string `json:"parent_id,omitempty"`
	Title          string `json:"title,omitempty"`
	Body           string `json:"body"`
	Actor          Actor  `json:"actor"`
	SubmissionMode string `json:"submission_mode"`
}

// Content returns the part of r that "same content" compares.
func (r *PostRequest) Content() Content {
	return Content{
		Type: r.Type, ParentID: r.ParentID, Title: r.Title, Body: r.Body,
		Actor: r.Actor, SubmissionMode: r.SubmissionMode,
	}
}

// NormalizeText converts s to Unicode NFC and unifies newlines ("\r\n" and
// a lone "\r" become "\n"). It changes nothing else. s must be valid UTF-8.
func NormalizeText(s string) string {
	if strings.IndexByte(s, '\r') >= 0 {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		s = strings.ReplaceAll(s, "\r", "\n")
	}
	return norm.NFC.String(s)
}

// ValidUUID reports whether s is a UUID in canonical text form
// (8-4-4-4-12 hex digits, any letter case).
func ValidUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// requestIDRule is the error message for a request_id that is not one.
const requestIDRule = "must be a UUID of version 4 (random) or 7 (time-ordered) in canonical form " +
	"(8-4-4-4-12 hex digits, e.g. 6f1c1f3e-1111-4a4a-8b8b-123456789abc); the nil UUID and other versions are refused"

// ValidRequestID reports whether s is a request_id docs/contract.md §1 accepts:
// a canonical UUID of version 4 or 7 with the RFC 9562 variant. Those are
// the versions a client draws at random (or random after a timestamp), so
// two clients do not pick the same one; the nil UUID, version 1 (a MAC
// address and a clock), the name-based versions and a wrong variant are
// refused, since they collide with other clients' posts. An id made by
// hand with the right version and variant digits
// (11111111-1111-4111-8111-111111111111) cannot be told from a random one
// and is accepted: no server can check how an id was drawn.
func ValidRequestID(s string) bool {
	if !ValidUUID(s) {
		return false
	}
	switch s[14] {
	case '4', '7':
	default:
		return false
	}
	switch s[19] {
	case '8', '9', 'a', 'b', 'A', 'B':
		return true
	}
	return false
}

// NormalizeOperator is Normalize for a post by the operator, who posts
// questions only.
func (r PostRequest) NormalizeOperator() (PostRequest, error) {
	r, err := r.Normalize()
	if err == nil && r.Type != TypeQuestion {
		return r, invalid("type", "must be question: operators post questions only")
	}
	return r, err
}

// Normalize validates r and returns its normalised form: text fields in NFC
// with unified newlines, UUIDs in lowercase. Errors are *Error with
// CodeInvalidRequest and a message naming the field. Normalize is
// idempotent: normalising a normalised request returns it unchanged.
func (r PostRequest) Normalize() (PostRequest, error) {
	if r.RequestID == "" {
		return r, invalid("request_id", "is required")
	}
	if !ValidRequestID(r.RequestID) {
		return r, invalid("request_id", requestIDRule)
	}
	r.RequestID = strings.ToLower(r.RequestID)

	switch r.Type {
	case TypeQuestion, TypeReply:
	case "":
		return r, invalid("type", "is required (question or reply)")
	default:
		return r, invalid("type", "must be question or reply")
	}

	texts := []struct {
		name string
		p    *string
	}{
		{"title", &r.Title}, {"body", &r.Body}, {"actor.name", &r.Actor.Name},
		{"actor.model", &r.Actor.Model}, {"actor.trigger", &r.Actor.Trigger},
	}
	for _, t := range texts {
		if !utf8.ValidString(*t.p) {
			return r, invalid(t.name, "is not valid UTF-8")
		}
		*t.p = NormalizeText(*t.p)
		// After normalising, so a "\r" (now "\n") is still accepted.
		if err := checkControls(t.name, *t.p, strings.HasPrefix(t.name, "actor.")); err != nil {
			return r, err
		}
	}

	switch r.Type {
	case TypeQuestion:
		if r.ParentID != "" {
			return r, invalid("parent_id", "must be absent or empty for a question")
		}
		if err := length("title", r.Title, 1, MaxTitle); err != nil {
			return r, err
		}
	case TypeReply:
		if r.ParentID == "" {
			return r, invalid("parent_id", "is required for a reply")
		}
		if !ValidUUID(r.ParentID) {
			return r, invalid("parent_id", "must be a UUID in canonical form (8-4-4-4-12 hex digits)")
		}
		r.ParentID = strings.ToLower(r.ParentID)
		if err := length("title", r.Title, 0, MaxTitle); err != nil {
			return r, err
		}
	}
	if err := length("body", r.Body, 1, MaxBody); err != nil {
		return r, err
	}
	if err := length("actor.name", r.Actor.Name, 1, MaxName); err != nil {
		return r, err
	}
	if err := length("actor.model", r.Actor.Model, 0, MaxModel); err != nil {
		return r, err
	}
	if err := length("actor.trigger", r.Actor.Trigger, 0, MaxTrigger); err != nil {
		return r, err
	}
	switch r.SubmissionMode {
	case ModeManual, ModeAssisted, ModeAutonomous:
	case "":
		return r, invalid("submission_mode", "is required (manual, assisted or autonomous)")
	default:
		return r, invalid("submission_mode", "must be manual, assisted or autonomous")
	}
	return r, nil
}

func invalid(field, msg string) *Error {
	return Errorf(CodeInvalidRequest, "%s %s", field, msg)
}

func length(field, s string, min, max int) *Error {
	n := utf8.RuneCountInString(s)
	if n < min {
		if min == 1 {
			return invalid(field, "is required and must not be empty")
		}
		return Errorf(CodeInvalidRequest, "%s must be at least %d characters", field, min)
	}
	if n > max {
		return Errorf(CodeInvalidRequest, "%s must be at most %d characters (got %d)", field, max, n)
	}
	return nil
}
