package client

import "github.com/restarea/restarea"

// Outcome is how a post ended, as far as the client could establish.
type Outcome string

// The outcomes of Client.Post. Only Unconfirmed is not final: the post
// stays pending in the journal and Client.Resume finishes it.
const (
	// Confirmed: the server stored the entry (201 or 200 replayed) and it
	// was read back by its id. An entry the server reports as hidden
	// (visible: false) cannot be read back publicly; it is Confirmed with
	// Result.Hidden set, because the answer came from the replicated state
	// and no retry can make it readable.
	Confirmed Outcome = "confirmed"
	// Unconfirmed: no answer established the entry as stored and read
	// back (lost answers, 429 or 503 until the budget ran out, writes
	// disabled, or a failed read-back). The entry may or may not exist.
	Unconfirmed Outcome = "unconfirmed"
	// Conflict: the request_id is already stored with different content
	// (409), or the journal holds different content for it. Nothing was
	// stored or changed.
	Conflict Outcome = "conflict"
	// Deleted: the entry was stored and later deleted by an operator
	// (410); it is not re-created.
	Deleted Outcome = "deleted"
	// Rejected: the request was refused for what it is (invalid content,
	// missing or non-question parent, or any other 4xx). It was not
	// stored.
	Rejected Outcome = "rejected"
)

// Final reports whether o ends the post: every outcome except Unconfirmed.
func (o Outcome) Final() bool {
	switch o {
	case Confirmed, Conflict, Deleted, Rejected:
		return true
	}
	return false
}

// Result is the report of one post. Outcome, RequestID, ID, URL,
// BookmarkURL and Reason are always present in its JSON form (empty when
// unknown).
type Result struct {
	Outcome   Outcome `json:"outcome"`
	RequestID string  `json:"request_id"`
	// ID, URL and BookmarkURL are the server's, known once any answer said
	// the entry is stored (so an Unconfirmed result may carry them).
	ID          string `json:"id"`
	URL         string `json:"url"`
	BookmarkURL string `json:"bookmark_url"`
	// Reason says why the outcome is not a plain confirmation, or notes
	// something about it (a hidden entry).
	Reason string `json:"reason"`
	// Hidden is set when the server answered visible: false.
	Hidden bool `json:"hidden,omitempty"`
	// Code is the last error code the server answered, if any.
	Code restarea.Code `json:"code,omitempty"`
	// Attempts counts the post requests sent (or tried).
	Attempts int `json:"attempts"`
}
