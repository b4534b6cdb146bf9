package node

import (
	"context"
	"time"

	"github.com/restarea/restarea"
)

// formRetryFor bounds how long a new cluster's first leader waits for
// every member to say which cluster versions it knows. The members of a
// cluster formed with --bootstrap-expect are up when it forms; one that
// stops answering meanwhile leaves the cluster at the first version, for
// an operator's finalize-upgrade.
const formRetryFor = 30 * time.Second

// formAtInitialVersion raises a new cluster to Config.InitialClusterVersion
// before its first leader configures anything, so that a cluster formed by
// this release runs what this release knows — checksums on the log and the
// state, the body fingerprints — from its first entry, instead of the
// first cluster version until an operator finalizes an upgrade that never
// happened. It acts only on a fresh state (fsm.FSM.Fresh) that this leader
// has confirmed complete in this term: a cluster that was ever led, by
// this release or an older one, is raised only by finalize-upgrade. The
// target is checked like any finalize: every member must know it.
func (n *Node) formAtInitialVersion() {
	// A state that is not fresh never becomes fresh, so a lagging one that
	// already holds settings or entries is judged at once: a cluster that
	// was ever led goes on to configure without waiting for a barrier.
	if fresh, err := n.fsm.Fresh(); err != nil || !fresh {
		return
	}
	deadline := time.Now().Add(formRetryFor)
	// A fresh-looking state may lag the log: judge it again once the
	// barrier of this term is applied. A barrier that times out on a busy
	// machine is tried again; configuring first would end the chance.
	for n.readyTerm.Load() != n.raft.CurrentTerm() {
		if !n.IsLeader() || time.Now().After(deadline) || !n.pause() {
			return
		}
		n.confirmApplied()
	}
	if fresh, err := n.fsm.Fresh(); err != nil || !fresh {
		return
	}
	limit := n.cfg.InitialClusterVersion
	if limit == 0 {
		limit = n.cfg.ClusterVersionMax
	}
	if n.fsm.ClusterVersion() >= limit {
		return
	}
	for n.IsLeader() {
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ApplyTimeout)
		ans, err := n.finalizeLeader(ctx, limit, true)
		cancel()
		switch {
		case err == nil:
			if ans.To > ans.From {
				n.log.Info("formed a new cluster at the newest cluster version every member knows",
					"cluster_version", ans.To, "limit", limit)
			}
			return
		case restarea.ErrorCode(err) == restarea.CodeConflict:
			// A member of an older release: the cluster runs what all know.
			n.log.Info("a new cluster stays at the cluster version every member knows", "cluster_version", n.fsm.ClusterVersion(), "reason", err.Error())
			return
		case time.Now().After(deadline):
			n.log.Warn("could not form the new cluster at the newest cluster version; finalize it with `restarea admin finalize-upgrade` once every member answers",
				"cluster_version", n.fsm.ClusterVersion(), "err", err)
			return
		}
		if !n.pause() {
			return
		}
	}
}

// pause waits between two tries of forming; false when the node stops.
func (n *Node) pause() bool {
	select {
	case <-n.stop:
		return false
	case <-time.After(250 * time.Millisecond):
		return true
	}
}
