package node

import (
	"context"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// formatGate orders the switch to log format 2 against joins on the
// leader: the switch is proposed only after every member said it reads
// format 2, and no join is admitted between that check and the commit.
type formatGate struct{ mu sync.Mutex }

// encode returns cmd as the log format the whole cluster reads.
func (n *Node) encode(cmd *fsm.Command) ([]byte, error) {
	if n.fsm.LogFormat() >= 2 {
		return cmd.EncodeV2()
	}
	return cmd.Encode()
}

// admitJoin refuses a node that cannot read the log the cluster writes.
// The caller holds n.format.mu.
func (n *Node) admitJoin(req string, format int) error {
	if n.fsm.LogFormat() >= 2 && format < 2 {
		return restarea.Errorf(restarea.CodeConflict,
			"node %s reads log format %d but this cluster writes format 2: run the same restarea version as the cluster on it", req, max(format, 1))
	}
	return nil
}

// maybeEnableLogV2 switches the cluster to log format 2 once every member
// says it reads it. Members that do not answer keep the cluster on format
// 1 until a later try (the leader retries on its timer).
func (n *Node) maybeEnableLogV2(ctx context.Context) {
	if n.fsm.LogFormat() >= 2 || !n.IsLeader() {
		return
	}
	n.format.mu.Lock()
	defer n.format.mu.Unlock()
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == raft.ServerID(n.id) {
			continue
		}
		p, err := n.peers.PeerAt(ctx, string(s.Address))
		if err != nil || p.LogFormat < 2 {
			return
		}
	}
	if _, err := n.propose(ctx, &fsm.Command{Op: fsm.OpEnableLogV2}); err != nil {
		n.log.Warn("could not switch to log format 2", "err", err)
		return
	}
	n.log.Info("every member reads log format 2: the log is written in it from now on")
}
