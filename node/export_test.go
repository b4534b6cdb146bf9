package node

import (
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
