package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Operation kinds.
const (
	OpPost = "post"
	OpRead = "read"
)

// Outcomes of a call. Created, Replayed, Conflict, Found and NotFound are
// definite answers; RateLimited, Unavailable, Timeout and Failed leave the
// effect of a post unknown (docs/contract.md §2: a 429 or 503 says nothing
// about storage, and an abandoned call may still be applied).
const (
	OutcomeCreated     = "created"      // 201
	OutcomeReplayed    = "replayed"     // 200, replayed: true
	OutcomeConflict    = "conflict"     // 409
	OutcomeRateLimited = "rate_limited" // 429
	OutcomeUnavailable = "unavailable"  // 503
	OutcomeTimeout     = "timeout"      // the client gave up waiting
	OutcomeFailed      = "failed"       // connection refused or reset, other 5xx
	OutcomeFound       = "found"        // a read returned the entry
	OutcomeNotFound    = "not_found"    // a read answered 404
	OutcomeUnexpected  = "unexpected"   // an answer the protocol does not allow here
)

// Known reports whether outcome is a definite answer, one the state
// machine decided.
func Known(outcome string) bool {
	switch outcome {
	case OutcomeCreated, OutcomeReplayed, OutcomeConflict, OutcomeFound, OutcomeNotFound:
		return true
	}
	return false
}

// Op is one call in the history: a post or a read of one request_id's
// entry, through one node and one channel. Times are nanoseconds since the
// start of the run on a monotonic clock.
type Op struct {
	Client      int    `json:"client"`
	Kind        string `json:"op"`
	RequestID   string `json:"request_id"`
	ContentHash string `json:"content_hash,omitempty"`
	// Type is the entry type of the post (question or reply).
	Type string `json:"type,omitempty"`
	// Probe marks a replay whose content was changed on purpose (a 409 is
	// expected).
	Probe   bool   `json:"probe,omitempty"`
	Node    int    `json:"node"`
	Channel string `json:"channel"`
	// Strong marks a read made with consistency=strong.
	Strong   bool   `json:"strong,omitempty"`
	CallNs   int64  `json:"call_ns"`
	ReturnNs int64  `json:"return_ns"`
	Status   int    `json:"status"`
	Outcome  string `json:"outcome"`
	EntryID  string `json:"entry_id,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Latency is how long the call took.
func (o Op) Latency() time.Duration { return time.Duration(o.ReturnNs - o.CallNs) }

// History collects operations from many goroutines. The zero value is not
// usable; NewHistory starts its clock.
type History struct {
	start time.Time
	mu    sync.Mutex
	ops   []Op
}

// NewHistory returns an empty history whose clock starts now.
func NewHistory() *History { return &History{start: time.Now()} }

// Now returns the history's clock: nanoseconds since it started,
// monotonic.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Add records op.
func (h *History) Add(op Op) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Len returns the number of recorded operations.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

// Ops returns a copy of the recorded operations.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Op(nil), h.ops...)
}

// OpsFrom returns a copy of the operations recorded after the first i.
func (h *History) OpsFrom(i int) []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i >= len(h.ops) {
		return nil
	}
	return append([]Op(nil), h.ops[max(i, 0):]...)
}

// WriteHistory writes ops as JSON lines to path.
func WriteHistory(path string, ops []Op) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, op := range ops {
		if err := enc.Encode(op); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadHistory reads a history written by WriteHistory.
func ReadHistory(r io.Reader) ([]Op, error) {
	var ops []Op
	dec := json.NewDecoder(r)
	for dec.More() {
		var op Op
		if err := dec.Decode(&op); err != nil {
			return nil, fmt.Errorf("history line %d: %w", len(ops)+1, err)
		}
		ops = append(ops, op)
	}
	return ops, nil
}
