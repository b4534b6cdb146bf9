package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/restarea/restarea"
)

// Record kinds of the journal.
const (
	// KindPending is written before a post is sent: it holds the
	// normalised request and the servers it goes to.
	KindPending = "pending"
	// KindOutcome is written when Post returns: it holds the Result.
	KindOutcome = "outcome"
)

// journalVersion is written in every record so that a later format can
// tell old records apart.
const journalVersion = 1

// Record is one line of the journal.
type Record struct {
	V         int                   `json:"v"`
	Kind      string                `json:"kind"`
	RequestID string                `json:"request_id"`
	Time      time.Time             `json:"time"`
	Servers   []string              `json:"servers,omitempty"`
	Request   *restarea.PostRequest `json:"request,omitempty"`
	Result    *Result               `json:"result,omitempty"`
}

// PendingPost is a post the journal holds as not finished: sent (or about
// to be) but with no final outcome.
type PendingPost struct {
	// Request is the normalised request exactly as it was first sent.
	Request restarea.PostRequest
	// Servers are the servers it was last sent to.
	Servers []string
	// Since is when it was first recorded.
	Since time.Time
	// Reason is why the last attempt left it unconfirmed ("" when the
	// process ended before Post returned).
	Reason string
}

// ErrJournalConflict is returned by Journal.Begin when the journal already
// holds different content for the request_id.
var ErrJournalConflict = errors.New("the journal holds different content for this request_id")

// Journal is an append-only file of JSON lines recording posts before they
// are sent and their outcomes after. Every append is fsynced before it
// returns, and appends from several processes are serialised by an
// exclusive lock on a sidecar file (PATH.lock), so records never
// interleave. It is safe for concurrent use.
type Journal struct {
	path string
	mu   sync.Mutex // serialises this process's goroutines; the file lock serialises processes
}

// DefaultJournalPath returns $XDG_STATE_HOME/restarea/journal.jsonl, or
// ~/.local/state/restarea/journal.jsonl when XDG_STATE_HOME is unset.
func DefaultJournalPath() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "restarea", "journal.jsonl"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("journal: no home directory for the default path: %w", err)
	}
	return filepath.Join(home, ".local", "state", "restarea", "journal.jsonl"), nil
}

// OpenJournal opens the journal at path ("" means DefaultJournalPath),
// creating its directory (0700) and the file (0600) if needed. A newly
// created file or directory is fsynced together with the directory that
// holds it, so that it survives a crash.
func OpenJournal(path string) (*Journal, error) {
	if path == "" {
		var err error
		if path, err = DefaultJournalPath(); err != nil {
			return nil, err
		}
	}
	dir := filepath.Dir(path)
	_, statErr := os.Stat(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		// A new directory's own entry must be durable too, or the journal
		// inside it could vanish with it after a crash.
		if err := syncDir(filepath.Dir(dir)); err != nil {
			return nil, err
		}
	}
	j := &Journal{path: path}
	err := j.locked(func() error {
		f, created, err := j.openAppend()
		if err != nil {
			return err
		}
		return j.closeSynced(f, created)
	})
	if err != nil {
		return nil, err
	}
	return j, nil
}

// Path returns the journal file's path.
func (j *Journal) Path() string { return j.path }

// Begin records req (which must be normalised) as pending, to be sent to
// servers. It returns ErrJournalConflict, recording nothing, when the
// journal already holds the request_id with different content: a retry
// must send the original content (docs/contract.md §7, step 4).
func (j *Journal) Begin(req restarea.PostRequest, servers []string) error {
	return j.locked(func() error {
		recs, err := j.read()
		if err != nil {
			return err
		}
		for _, r := range recs {
			if r.Kind == KindPending && r.RequestID == req.RequestID && r.Request != nil &&
				!restarea.SameContent(r.Request.Content(), req.Content()) {
				return ErrJournalConflict
			}
		}
		return j.append(Record{Kind: KindPending, RequestID: req.RequestID, Servers: servers, Request: &req})
	})
}

// Finish records the outcome of a post.
func (j *Journal) Finish(res Result) error {
	return j.locked(func() error {
		return j.append(Record{Kind: KindOutcome, RequestID: res.RequestID, Result: &res})
	})
}

// Records returns every readable record in file order. A line that cannot
// be parsed (the torn end of an append cut by a crash) is skipped.
func (j *Journal) Records() ([]Record, error) {
	var recs []Record
	err := j.locked(func() error {
		var err error
		recs, err = j.read()
		return err
	})
	return recs, err
}

// Pending returns the posts without a final outcome, in the order they
// were first recorded: those whose last record is a pending record (the
// process ended before Post returned) or an Unconfirmed outcome.
func (j *Journal) Pending() ([]PendingPost, error) {
	recs, err := j.Records()
	if err != nil {
		return nil, err
	}
	return pendingOf(recs), nil
}

func pendingOf(recs []Record) []PendingPost {
	var order []string
	posts := map[string]*PendingPost{}
	open := map[string]bool{}
	for _, r := range recs {
		switch r.Kind {
		case KindPending:
			if r.Request == nil {
				continue
			}
			p, seen := posts[r.RequestID]
			if !seen {
				p = &PendingPost{Request: *r.Request, Since: r.Time}
				posts[r.RequestID] = p
				order = append(order, r.RequestID)
			}
			p.Servers, p.Reason = r.Servers, ""
			open[r.RequestID] = true
		case KindOutcome:
			if p, seen := posts[r.RequestID]; seen && r.Result != nil {
				open[r.RequestID] = !r.Result.Outcome.Final()
				p.Reason = r.Result.Reason
			}
		}
	}
	var out []PendingPost
	for _, id := range order {
		if open[id] {
			out = append(out, *posts[id])
		}
	}
	return out
}
