package node

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea/fsm"
)

// From cluster version 3 every command in the raft log carries the CRC-32C
// of its bytes (fsm.Command.EncodeSummed). Damage on this node's disk is
// caught at three points, each because raft reads entries for three
// purposes:
//
//   - checkedLogs: every entry raft reads from raft.db — at start (raft
//     scans the log after its snapshot for configurations), to apply it, to
//     send it — is checked as it is read, so a damaged entry stops the node
//     the first time it is met, even one already applied.
//   - the state machine (fsm.DecodeCommand) refuses to apply a damaged
//     command and stops applying there, keeping nothing of the open
//     transaction.
//   - raftTransport.AppendEntries refuses to send a damaged command, so a
//     leader never hands its damage to a follower.
//
// Each reports an *fsm.CorruptError to onHalt, which stops the node.
// checkedLogs itself returns the entry as read, without an error: raft
// panics when GetLog fails while it starts or applies (NewRaft,
// processLogs in hashicorp/raft v1.7.2), which would end the process with
// a stack trace instead of stopping the node with the reason, and the two
// other checks keep the entry from being applied or sent meanwhile.

// checkedLogs is raft's log store with every command entry read from it
// checked against its checksum. Every other method is the store's own.
type checkedLogs struct {
	raft.LogStore
	// damaged receives the damage found, with File and Index set.
	damaged func(*fsm.CorruptError)
}

// GetLog reads the entry at index and checks it; see checkedLogs.
func (s checkedLogs) GetLog(index uint64, l *raft.Log) error {
	if err := s.LogStore.GetLog(index, l); err != nil {
		return err
	}
	if c := checkEntry(l); c != nil {
		s.damaged(c)
	}
	return nil
}

// IsMonotonic keeps what the store says (raft.MonotonicLogStore), as
// raft.LogCache does: raft asks it after restoring a snapshot.
func (s checkedLogs) IsMonotonic() bool {
	m, ok := s.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// checkEntry returns the damage of a command entry whose checksum does
// not match, naming raft.db and the entry's index, or nil. Other entries
// (configurations, no-ops) and commands written before cluster version 3
// carry no checksum.
func checkEntry(l *raft.Log) *fsm.CorruptError {
	if l.Type != raft.LogCommand {
		return nil
	}
	var c *fsm.CorruptError
	if !errors.As(fsm.VerifyCommand(l.Data), &c) {
		return nil
	}
	c.File, c.Index = "raft.db", l.Index
	return c
}

// logDamaged is what checkedLogs and the transport report: the node stops
// (onHalt, once; later reports of the same or other damage add nothing).
func (n *Node) logDamaged(c *fsm.CorruptError) { n.onHalt(c) }

// checkLog reads every entry of logs from first to last and returns the
// first damaged one as an *fsm.CorruptError, or a read error. It is what
// an offline tool runs before it carries the log anywhere (Recover).
func checkLog(logs raft.LogStore, first, last uint64) error {
	for i := first; i <= last && i > 0; i++ {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			return fmt.Errorf("raft log: entry %d: %w", i, err)
		}
		if c := checkEntry(&l); c != nil {
			return c
		}
	}
	return nil
}
