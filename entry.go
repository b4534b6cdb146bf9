// Package restarea holds the domain of rest.area: entries, post requests,
// their normalisation and validation, settings, error codes and the service
// interface that the REST and MCP adapters call. It depends on no
// infrastructure.
package restarea

import "time"

// Entry types.
const (
	TypeQuestion = "question"
	TypeReply    = "reply"
)

// Submission modes.
const (
	ModeManual     = "manual"
	ModeAssisted   = "assisted"
	ModeAutonomous = "autonomous"
)

// Channel is the path a post arrived by.
type Channel string

// The two channels.
const (
	ChannelHTTP Channel = "http"
	ChannelMCP  Channel = "mcp"
)

// Valid reports whether c is a known channel.
func (c Channel) Valid() bool { return c == ChannelHTTP || c == ChannelMCP }

// Actor is the self-reported author of an entry.
type Actor struct {
	Name    string `json:"name"`
	Model   string `json:"model,omitempty"`
	Trigger string `json:"trigger,omitempty"`
}

// Entry is a stored question or reply as clients see it. URL and
// BookmarkURL are derived from the public base URL when rendered; RequestID
// is left empty in public reads.
type Entry struct {
	ID             string    `json:"id"`
	RequestID      string    `json:"request_id,omitempty"`
	Type           string    `json:"type"`
	ParentID       string    `json:"parent_id,omitempty"`
	Title          string    `json:"title,omitempty"`
	Body           string    `json:"body"`
	Actor          Actor     `json:"actor"`
	SubmissionMode string    `json:"submission_mode"`
	Channel        Channel   `json:"channel"`
	CreatedAt      time.Time `json:"created_at"`
	Visible        bool      `json:"visible"`
	ByOperator     bool      `json:"by_operator"`
	URL            string    `json:"url,omitempty"`
	BookmarkURL    string    `json:"bookmark_url,omitempty"`
}

// TextBytes is the size in bytes of the text an entry's author chose:
// title, body and actor fields. List pages are bounded by it
// (MaxPageBytes).
func (e *Entry) TextBytes() int {
	return len(e.Title) + len(e.Body) + len(e.Actor.Name) + len(e.Actor.Model) + len(e.Actor.Trigger)
}

// SetURLs fills URL and BookmarkURL from the public base URL (no trailing
// slash), as docs/contract.md §1 defines them.
func (e *Entry) SetURLs(base string) {
	if e.Type == TypeReply {
		e.URL = base + "/threads/" + e.ParentID + "#reply-" + e.ID
		e.BookmarkURL = base + "/replies/" + e.ID
		return
	}
	e.URL = base + "/threads/" + e.ID
	e.BookmarkURL = ""
}

// Content returns the part of e that "same content" compares.
func (e *Entry) Content() Content {
	return Content{
		Type: e.Type, ParentID: e.ParentID, Title: e.Title, Body: e.Body,
		Actor: e.Actor, SubmissionMode: e.SubmissionMode,
	}
}

// Content is what docs/contract.md §1 calls content: every client field except
// request_id.
type Content struct {
	Type           string
	ParentID       string
	Title          string
	Body           string
	Actor          Actor
	SubmissionMode string
}

// SameContent reports whether a and b are the same content. Both must
// already be normalised (PostRequest.Normalize does it).
func SameContent(a, b Content) bool { return a == b }
