package node

import (
	"context"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

func (n *Node) entryCommand(ctx context.Context, op fsm.Op, id string) (*fsm.Result, error) {
	id, err := canonicalID(id)
	if err != nil {
		return nil, err
	}
	res, err := n.propose(ctx, n.withOrigin(ctx, &fsm.Command{Op: op, EntryID: id}))
	if err != nil {
		return nil, err
	}
	if err := res.Error(); err != nil {
		return nil, err
	}
	n.logAction(ctx, restarea.AuditAction(op), id, res)
	return res, nil
}

// HideEntry hides an entry from public reads.
func (n *Node) HideEntry(ctx context.Context, id string) (restarea.Entry, error) {
	res, err := n.entryCommand(ctx, fsm.OpHide, id)
	if err != nil {
		return restarea.Entry{}, err
	}
	return n.withURL(*res.Entry), nil
}

// UnhideEntry makes a hidden entry public again.
func (n *Node) UnhideEntry(ctx context.Context, id string) (restarea.Entry, error) {
	res, err := n.entryCommand(ctx, fsm.OpUnhide, id)
	if err != nil {
		return restarea.Entry{}, err
	}
	return n.withURL(*res.Entry), nil
}

// DeleteEntry erases an entry and keeps a tombstone for its request_id.
func (n *Node) DeleteEntry(ctx context.Context, id string) error {
	_, err := n.entryCommand(ctx, fsm.OpDelete, id)
	return err
}

// ListEntries lists every stored entry for operators, newest first.
func (n *Node) ListEntries(ctx context.Context, opts restarea.ListOptions) (restarea.EntryPage, error) {
	if err := n.readBarrier(ctx, opts.Consistency); err != nil {
		return restarea.EntryPage{}, err
	}
	p, err := n.fsm.Entries(opts.Cursor, opts.Limit)
	p.Entries = n.withURLs(p.Entries)
	return p, err
}

// Settings returns the settings in force.
func (n *Node) Settings(ctx context.Context) (restarea.Settings, error) {
	if err := n.localBarrier(ctx); err != nil {
		return restarea.Settings{}, err
	}
	return n.fsm.Settings()
}

// UpdateSettings applies an operator's patch through the log.
func (n *Node) UpdateSettings(ctx context.Context, patch restarea.SettingsPatch) (restarea.Settings, error) {
	if err := patch.Validate(); err != nil {
		return restarea.Settings{}, err
	}
	res, err := n.propose(ctx, n.withOrigin(ctx, &fsm.Command{Op: fsm.OpSettings, Settings: &fsm.SettingsCommand{Patch: patch}}))
	if err != nil {
		return restarea.Settings{}, err
	}
	if err := res.Error(); err != nil {
		return restarea.Settings{}, err
	}
	n.logAction(ctx, restarea.AuditSettings, "", res)
	return *res.Settings, nil
}

// OperatorPost posts a question as the operator (by_operator: true).
func (n *Node) OperatorPost(ctx context.Context, req restarea.PostRequest, meta restarea.PostMeta) (restarea.PostResult, error) {
	return n.post(ctx, req, meta, true)
}
