package node

import (
	"context"
	"encoding/json"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// auditReady reports whether the cluster writes log format 3, the first
// that audits: before it no node may be sent a command carrying the audit
// fields (older nodes refuse unknown fields on the internal channel).
func (n *Node) auditReady() bool { return n.fsm.LogFormat() >= 3 }

// withOrigin stamps an admin command with the source address of the
// operator's request, once the cluster audits.
func (n *Node) withOrigin(ctx context.Context, cmd *fsm.Command) *fsm.Command {
	if n.auditReady() {
		cmd.Origin = restarea.OriginFrom(ctx)
	}
	return cmd
}

// originContext drops the request's source address while the cluster
// does not audit yet, so that it is not sent to a leader that would
// refuse the field.
func (n *Node) originContext(ctx context.Context) context.Context {
	if n.auditReady() || restarea.OriginFrom(ctx) == "" {
		return ctx
	}
	return restarea.WithOrigin(ctx, "")
}

// logAction writes the log line of an operator action: what it changed,
// from the audit record the state machine wrote, or that it changed
// nothing. The admin token never reaches here.
func (n *Node) logAction(ctx context.Context, action restarea.AuditAction, target string, res *fsm.Result) {
	attrs := []any{"action", action, "target", target, "source", restarea.OriginFrom(ctx)}
	switch {
	case res != nil && res.Audit != nil:
	case n.auditReady():
		n.log.Info("operator action changed nothing", attrs...)
		return
	default:
		n.log.Info("operator action (not audited before log format 3)", attrs...)
		return
	}
	changes, _ := json.Marshal(res.Audit.Changes)
	attrs = append(attrs, "seq", res.Audit.Seq, "changes", string(changes))
	n.log.Info("operator action", attrs...)
}

// ListAudit returns the audit trail, newest first.
func (n *Node) ListAudit(ctx context.Context, opts restarea.ListOptions) (restarea.AuditPage, error) {
	if err := n.readBarrier(ctx, opts.Consistency); err != nil {
		return restarea.AuditPage{}, err
	}
	return n.fsm.Audit(opts.Cursor, opts.Limit)
}

// recordTransfer appends the audit record of a leadership transfer that
// succeeded: raft hands leadership over outside the log, so this node
// proposes the record afterwards (to the new leader). from is the leader
// before; to is the requested target ("" = whichever voter took over,
// waited for up to an election timeout).
func (n *Node) recordTransfer(ctx context.Context, from, to string) {
	if to == "" {
		to = n.newLeader(from)
	}
	if to != "" && to == from {
		return // the target already led: nothing changed
	}
	if !n.auditReady() {
		n.log.Info("operator action", "action", restarea.AuditLeadershipTransfer, "from", from, "to", to,
			"source", restarea.OriginFrom(ctx))
		return
	}
	res, err := n.propose(ctx, n.withOrigin(ctx, &fsm.Command{Op: fsm.OpAudit, Audit: &fsm.AuditCommand{
		Action: restarea.AuditLeadershipTransfer, MemberID: to, From: from,
	}}))
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		// The transfer happened; only its record is missing.
		n.log.Log(context.Background(), n.faultLevel(), "could not record a leadership transfer in the audit trail", "from", from, "to", to, "err", err)
		return
	}
	n.logAction(ctx, restarea.AuditLeadershipTransfer, to, res)
}

// newLeader waits up to an election timeout for a leader other than
// from to make itself known; "" when none does.
func (n *Node) newLeader(from string) string {
	deadline := time.Now().Add(n.cfg.ElectionTimeout)
	for {
		if _, id := n.raft.LeaderWithID(); id != "" && string(id) != from {
			return string(id)
		}
		if time.Now().After(deadline) {
			return ""
		}
		time.Sleep(5 * time.Millisecond)
	}
}
