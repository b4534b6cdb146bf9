package node

import (
	"context"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea/fsm"
)

// LoggedPosts counts the post commands in n's raft log after index from:
// what a test asserts was not appended, whatever else (a new leader's own
// entries) the log gained meanwhile.
func (n *Node) LoggedPosts(from uint64) (int, error) {
	last, err := n.logs.LastIndex()
	if err != nil {
		return 0, err
	}
	posts := 0
	for i := from + 1; i <= last; i++ {
		var l raft.Log
		if err := n.logs.GetLog(i, &l); err != nil {
			return 0, err
		}
		if l.Type != raft.LogCommand {
			continue
		}
		if cmd, err := fsm.DecodeCommand(l.Data); err == nil && cmd.Op == fsm.OpPost {
			posts++
		}
	}
	return posts, nil
}

// LastLogIndex is the index of the last entry in n's raft log.
func (n *Node) LastLogIndex() (uint64, error) { return n.logs.LastIndex() }

// Propose proposes cmd as the node's own duties do (through the leader).
// Tests use it to put commands in the log that no operator path proposes
// in that situation, such as a cluster version some member does not know.
func (n *Node) Propose(ctx context.Context, cmd *fsm.Command) (*fsm.Result, error) {
	return n.propose(ctx, cmd)
}

// TakeSnapshot has raft write a snapshot now (raft refuses when nothing
// was applied since the last one).
func (n *Node) TakeSnapshot() error { return n.raft.Snapshot().Error() }

// RaftAppliedIndex is the last index raft handed to n's state machine:
// after a restart raft reads its log again from the start, whatever the
// state file already holds.
func (n *Node) RaftAppliedIndex() uint64 { return n.raft.AppliedIndex() }
