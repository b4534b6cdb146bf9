package node

import (
	"context"
	"strings"

	"github.com/google/uuid"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// Post validates req (400 before anything is proposed) and decides it in
// the replicated state machine.
func (n *Node) Post(ctx context.Context, req restarea.PostRequest, meta restarea.PostMeta) (restarea.PostResult, error) {
	return n.post(ctx, req, meta, false)
}

func (n *Node) post(ctx context.Context, req restarea.PostRequest, meta restarea.PostMeta, operator bool) (restarea.PostResult, error) {
	channel := meta.Channel
	if !channel.Valid() {
		channel = restarea.ChannelHTTP
	}
	res, err := n.decidePost(ctx, req, meta, channel, operator)
	n.met.countPost(channel, res, err)
	return res, err
}

func (n *Node) decidePost(ctx context.Context, req restarea.PostRequest, meta restarea.PostMeta, channel restarea.Channel, operator bool) (restarea.PostResult, error) {
	// The one place a post's rules are checked, whichever adapter it
	// came through: before anything is proposed, so a 400 touches no state.
	normalize := restarea.PostRequest.Normalize
	if operator {
		normalize = restarea.PostRequest.NormalizeOperator
	}
	req, err := normalize(req)
	if err != nil {
		return restarea.PostResult{}, err
	}
	attempt := meta.AttemptID
	if attempt == "" {
		attempt = uuid.NewString()
	}
	res, err := n.propose(ctx, &fsm.Command{Op: fsm.OpPost, Post: &fsm.PostCommand{
		Request: req, Source: meta.Source, Channel: channel, AttemptID: attempt, ByOperator: operator,
	}})
	if err != nil {
		return restarea.PostResult{}, err
	}
	if err := res.Error(); err != nil {
		return restarea.PostResult{}, err
	}
	e := *res.Entry
	e.SetURLs(n.PublicURL())
	return restarea.PostResult{Entry: e, Replayed: res.Replayed}, nil
}

// readBarrier makes a strong read linearizable: the leader confirms its
// leadership, and the read waits until the state reflects every write
// committed before it began. A default read waits only for the writes
// this node acknowledged (localBarrier); a stale one for nothing.
func (n *Node) readBarrier(ctx context.Context, c restarea.Consistency) error {
	switch c {
	case restarea.ConsistencyStale:
		return nil
	case restarea.ConsistencyLocal:
		return n.localBarrier(ctx)
	}
	index, err := n.confirmedIndex(ctx)
	if err != nil {
		return err
	}
	return n.waitApplied(ctx, index)
}

func canonicalID(id string) (string, error) {
	if !restarea.ValidUUID(id) {
		return "", restarea.Errorf(restarea.CodeNotFound, "no entry has id %q", id)
	}
	return strings.ToLower(id), nil
}

func (n *Node) withURL(e restarea.Entry) restarea.Entry {
	e.SetURLs(n.PublicURL())
	return e
}

func (n *Node) withURLs(es []restarea.Entry) []restarea.Entry {
	for i := range es {
		es[i].SetURLs(n.PublicURL())
	}
	return es
}

// ListThreads returns public questions, newest first.
func (n *Node) ListThreads(ctx context.Context, opts restarea.ListOptions) (restarea.ThreadPage, error) {
	if err := n.readBarrier(ctx, opts.Consistency); err != nil {
		return restarea.ThreadPage{}, err
	}
	p, err := n.fsm.Threads(opts.Cursor, opts.Limit)
	p.Threads = n.withURLs(p.Threads)
	return p, err
}

// GetThread returns a public question.
func (n *Node) GetThread(ctx context.Context, id string, opts restarea.ReadOptions) (restarea.Entry, error) {
	id, err := canonicalID(id)
	if err != nil {
		return restarea.Entry{}, err
	}
	if err := n.readBarrier(ctx, opts.Consistency); err != nil {
		return restarea.Entry{}, err
	}
	e, err := n.fsm.Thread(id)
	return n.withURL(e), err
}

// ListReplies returns the public replies of a public question, oldest
// first, or newest first with opts.NewestFirst.
func (n *Node) ListReplies(ctx context.Context, threadID string, opts restarea.ListOptions) (restarea.ReplyPage, error) {
	threadID, err := canonicalID(threadID)
	if err != nil {
		return restarea.ReplyPage{}, err
	}
	if err := n.readBarrier(ctx, opts.Consistency); err != nil {
		return restarea.ReplyPage{}, err
	}
	list := n.fsm.Replies
	if opts.NewestFirst {
		list = n.fsm.RepliesNewest
	}
	p, err := list(threadID, opts.Cursor, opts.Limit)
	p.Replies = n.withURLs(p.Replies)
	return p, err
}

// GetReply returns a public reply of a public question.
func (n *Node) GetReply(ctx context.Context, id string, opts restarea.ReadOptions) (restarea.Entry, error) {
	id, err := canonicalID(id)
	if err != nil {
		return restarea.Entry{}, err
	}
	if err := n.readBarrier(ctx, opts.Consistency); err != nil {
		return restarea.Entry{}, err
	}
	e, err := n.fsm.Reply(id)
	return n.withURL(e), err
}
