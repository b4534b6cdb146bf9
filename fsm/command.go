package fsm

import (
	"fmt"
	"time"

	"github.com/restarea/restarea"
)

// Op names a kind of command.
type Op string

// The commands the state machine applies.
const (
	OpPost      Op = "post"
	OpHide      Op = "hide"
	OpUnhide    Op = "unhide"
	OpDelete    Op = "delete"
	OpSettings  Op = "settings"
	OpConfigure Op = "configure"
	OpExpire    Op = "expire"
	OpMember    Op = "member"
	// OpAudit records an operator action that is not itself a state
	// machine command (a leadership transfer) in the audit trail.
	OpAudit Op = "audit"
)

// Command is one entry of the replicated log. It carries everything a
// decision needs — the leader's clock, the id proposed for a new entry, the
// source and channel — so that applying it is deterministic on every node.
//
// Its binary log form (codec.go) is positional: a field added here, or in
// a type a Command carries, must be added there under a new format, and
// TestCodecFieldInventory fails until it is.
type Command struct {
	Op Op `json:"op"`
	// Time is the leader's clock in Unix nanoseconds when it proposed the
	// command. The state machine never goes back in time: it uses the
	// larger of Time and the last time it applied.
	Time int64 `json:"time"`

	Post     *PostCommand     `json:"post,omitempty"`
	EntryID  string           `json:"entry_id,omitempty"`
	Settings *SettingsCommand `json:"settings,omitempty"`
	Expire   *ExpireCommand   `json:"expire,omitempty"`
	Member   *MemberCommand   `json:"member,omitempty"`
	Audit    *AuditCommand    `json:"audit,omitempty"`
	// Backfill bounds an OpBackfill (cluster version 4). Like the audit
	// fields it has no binary form: it is written as JSON.
	Backfill *BackfillCommand `json:"backfill,omitempty"`

	// ClusterVersion is the target of an OpClusterVersion. Like the audit
	// fields it has no binary form: a command carrying it is written as
	// JSON (see EncodeV2).
	ClusterVersion int `json:"cluster_version,omitempty"`

	// Origin is the source address of the operator request behind an
	// admin command, for its audit record. Like Audit it is only set once
	// the cluster writes log format 3, and a command carrying either is
	// written as JSON (see EncodeV2).
	Origin string `json:"origin,omitempty"`
}

// PostCommand is a post attempt that passed syntax checks.
type PostCommand struct {
	Request restarea.PostRequest `json:"request"`
	Source  string               `json:"source"`
	Channel restarea.Channel     `json:"channel"`
	// AttemptID identifies the client request across internal retries: a
	// stored entry created by the same attempt answers 201, not 200.
	AttemptID string `json:"attempt_id"`
	// NewID is the id the entry gets if this command creates it.
	NewID      string `json:"new_id"`
	ByOperator bool   `json:"by_operator,omitempty"`
}

// SettingsCommand changes settings. An operator's patch (FromConfig false)
// takes precedence over configuration forever after; a node's configured
// defaults (FromConfig true) only change limits no operator has set.
type SettingsCommand struct {
	Patch      restarea.SettingsPatch `json:"patch"`
	FromConfig bool                   `json:"from_config,omitempty"`
}

// ExpireCommand drops entries older than Retention and tombstones older
// than TombstoneRetention, at most MaxItems of each per command so one
// command never makes a huge transaction.
type ExpireCommand struct {
	Retention          time.Duration `json:"retention"`
	TombstoneRetention time.Duration `json:"tombstone_retention"`
	MaxItems           int           `json:"max_items"`
}

// Result is what applying a command answered. Every node computes the same
// Result for the same log entry.
type Result struct {
	// Index is the log index of the command.
	Index uint64 `json:"index"`
	// Entry is the entry a post or admin command concerns (with request_id).
	Entry *restarea.Entry `json:"entry,omitempty"`
	// Replayed is true when a post matched a stored request of another
	// attempt (200 rather than 201).
	Replayed bool `json:"replayed,omitempty"`
	// Settings are the settings in force after a settings command.
	Settings *restarea.Settings `json:"settings,omitempty"`
	// Expired counts what an expire command removed.
	Expired int `json:"expired,omitempty"`
	// Backfilled counts the entries an OpBackfill indexed by their body;
	// BackfillLeft says that older entries are still to be indexed.
	Backfilled   int  `json:"backfilled,omitempty"`
	BackfillLeft bool `json:"backfill_left,omitempty"`
	// Audit is the audit record the command wrote: nil when it changed
	// nothing an operator is accountable for.
	Audit *restarea.AuditRecord `json:"audit,omitempty"`
	// Err is the decision when the command was refused.
	Err *ResultError `json:"error,omitempty"`
	// SourceFull is set on a post the per-source limit admitted that
	// filled its source's window: how long until the window frees a slot.
	// It is a hint for the leader that applied it (node/precheck.go), not
	// part of the decision, and is never sent.
	SourceFull time.Duration `json:"-"`
}

// ResultError is a refusal decided by the state machine.
type ResultError struct {
	Code          restarea.Code `json:"code"`
	Message       string        `json:"message"`
	RetryAfterSec float64       `json:"retry_after_seconds,omitempty"`
}

// Error returns the refusal as a *restarea.Error, or nil.
func (r *Result) Error() error {
	if r == nil || r.Err == nil {
		return nil
	}
	e := restarea.Errorf(r.Err.Code, "%s", r.Err.Message)
	e.RetryAfter = time.Duration(r.Err.RetryAfterSec * float64(time.Second))
	return e
}

func refuse(code restarea.Code, retry time.Duration, format string, args ...any) *Result {
	return &Result{Err: &ResultError{
		Code: code, Message: fmt.Sprintf(format, args...), RetryAfterSec: retry.Seconds(),
	}}
}
