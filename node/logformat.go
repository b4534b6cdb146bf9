package node

import (
	"context"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// formatGate orders a switch of the log format against joins on the
// leader: the switch is proposed only after every member said it reads
// the format, and no join is admitted between that check and the commit.
type formatGate struct{ mu sync.Mutex }

// encode returns cmd as the log format the whole cluster reads. From
// cluster version 3 on, every command is written in the checksummed
// envelope (fsm.Command.EncodeSummed), which every member reads: the
// version is raised only once every member knows it, and a binary that
// knows it reads log format 3. Before it — until an operator finalizes the
// upgrade — the log stays readable by the previous release, so a node can
// still be downgraded. This is the only place a command is encoded for the
// log: a follower forwards commands (cluster.encodeBatch) and the leader
// proposes them again, through here.
func (n *Node) encode(cmd *fsm.Command) ([]byte, error) {
	if n.fsm.ClusterVersion() >= 3 {
		return cmd.EncodeSummed()
	}
	if n.fsm.LogFormat() >= 2 {
		return cmd.EncodeV2()
	}
	return cmd.Encode()
}

// admitJoin refuses a node that cannot read the log the cluster writes,
// or that does not know the cluster version in force (clusterMax 0: a
// release that predates cluster versions, which knows version 1 only).
// The caller holds n.format.mu, which finalizing an upgrade takes too.
func (n *Node) admitJoin(req string, format, clusterMax int) error {
	if cur := n.fsm.LogFormat(); cur >= 2 && max(format, 1) < cur {
		return restarea.Errorf(restarea.CodeConflict,
			"node %s reads log format %d but this cluster writes format %d: run the same restarea version as the cluster on it", req, max(format, 1), cur)
	}
	if cur := n.fsm.ClusterVersion(); max(clusterMax, 1) < cur {
		return restarea.Errorf(restarea.CodeConflict,
			"node %s knows cluster versions up to %d but this cluster runs cluster version %d (its upgrade was finalized): run a release that knows cluster version %d on it, such as this node's %s",
			req, max(clusterMax, 1), cur, cur, n.cfg.Version)
	}
	return nil
}

// formatSwitches are the commands that raise the log format, by the
// format they switch to.
var formatSwitches = map[int]fsm.Op{2: fsm.OpEnableLogV2, 3: fsm.OpEnableLogV3}

// maybeEnableLogV2 raises the cluster's log format, one step at a time up
// to the newest format every member says it reads (format 2: the compact
// log; format 3: the audit trail). Members that do not answer keep the
// cluster where it is until a later try (the leader retries on its timer).
func (n *Node) maybeEnableLogV2(ctx context.Context) {
	if n.fsm.LogFormat() >= fsm.LogFormatMax || !n.IsLeader() {
		return
	}
	n.format.mu.Lock()
	defer n.format.mu.Unlock()
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	target := fsm.LogFormatMax
	for _, s := range f.Configuration().Servers {
		if s.ID == raft.ServerID(n.id) {
			continue
		}
		p, err := n.peers.PeerAt(ctx, string(s.Address))
		if err != nil {
			return
		}
		target = min(target, p.LogFormat)
	}
	for v := n.fsm.LogFormat() + 1; v <= target; v++ {
		if _, err := n.propose(ctx, &fsm.Command{Op: formatSwitches[v]}); err != nil {
			n.log.Log(context.Background(), n.faultLevel(), "could not switch the log format", "to", v, "err", err)
			return
		}
		n.log.Info("every member reads this log format: the log is written in it from now on", "log_format", v)
	}
}
