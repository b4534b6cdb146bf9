package restarea

import (
	"context"
	"encoding/json"
	"time"
)

// AuditAction names what an operator did.
type AuditAction string

// The actions the audit trail records. Each is one record, written by the
// state machine in the transaction of the change itself, so every node
// holds the same trail.
const (
	AuditHide     AuditAction = "hide"
	AuditUnhide   AuditAction = "unhide"
	AuditDelete   AuditAction = "delete"
	AuditSettings AuditAction = "settings"
	// AuditMemberAdd: a node's URL was recorded for the first time (it
	// joined, or formed the cluster).
	AuditMemberAdd AuditAction = "member_add"
	// AuditMemberUpdate: a known member announced a different URL.
	AuditMemberUpdate AuditAction = "member_update"
	// AuditMemberRemove: an operator removed a server from the cluster.
	AuditMemberRemove AuditAction = "member_remove"
	// AuditLeadershipTransfer: an operator handed leadership over.
	AuditLeadershipTransfer AuditAction = "leadership_transfer"
	// AuditClusterVersion: an operator finalized an upgrade (or the leader
	// did, with --auto-finalize-upgrade), raising the cluster version by
	// one step.
	AuditClusterVersion AuditAction = "cluster_version"
)

// AuditChange is one field an action changed, with its value before and
// after, as JSON (null when the field did not exist on that side).
type AuditChange struct {
	Field  string          `json:"field"`
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// AuditRecord is one operator action as the replicated state remembers
// it. Records expire with the entries' retention (--retention).
type AuditRecord struct {
	// Seq is the log index of the command that made the change: it orders
	// the trail and is the same on every node.
	Seq uint64 `json:"seq"`
	// Time is the leader's clock when it proposed the command.
	Time   time.Time   `json:"time"`
	Action AuditAction `json:"action"`
	// EntryID and EntryType name the entry of a hide, unhide or delete.
	EntryID   string `json:"entry_id,omitempty"`
	EntryType string `json:"entry_type,omitempty"`
	// MemberID names the server of a membership action (for a leadership
	// transfer, the new leader).
	MemberID string        `json:"member_id,omitempty"`
	Changes  []AuditChange `json:"changes"`
	// Source is the address of the operator's request, when the action
	// came through the admin API ("" otherwise).
	Source string `json:"source,omitempty"`
	// FromConfig marks settings applied from a node's configuration (its
	// rate flags) rather than by an operator's request.
	FromConfig bool `json:"from_config,omitempty"`
}

// AuditPage is one page of the audit trail, newest first. NextCursor is
// nil on the last page.
type AuditPage struct {
	Records    []AuditRecord `json:"records"`
	NextCursor *string       `json:"next_cursor"`
}

type originKey struct{}

// WithOrigin returns ctx carrying the source address of an operator's
// request, which the audit record of the change it makes then names.
func WithOrigin(ctx context.Context, source string) context.Context {
	return context.WithValue(ctx, originKey{}, source)
}

// OriginFrom returns the source address WithOrigin put in ctx, or "".
func OriginFrom(ctx context.Context) string {
	s, _ := ctx.Value(originKey{}).(string)
	return s
}
