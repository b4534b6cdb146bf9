// Package cluster is what turns single nodes into a cluster: the internal
// node-to-node channel (forwarding writes to the leader, read indexes,
// joins, removals, leadership transfer), signed with the cluster secret and
// carried by the transport package's port; formation by join and by
// bootstrap-expect; and membership changes on raft. It does not know the
// node: it talks to it through Backend.
package cluster

import (
	"errors"
)

// Paths of the internal channel (served on the raft port's RPC side).
const (
	pathApply     = "/internal/v1/apply"
	pathReadIndex = "/internal/v1/read-index"
	pathJoin      = "/internal/v1/join"
	pathRemove    = "/internal/v1/remove"
	pathTransfer  = "/internal/v1/transfer"
	pathPeer      = "/internal/v1/peer"
	// pathFinalize finalizes an upgrade on the leader (FinalizeLeader).
	// Nodes of v0.1.0 lack it (404).
	pathFinalize = "/internal/v1/finalize-upgrade"
)

// Paths on a node's public HTTP listener that other nodes (not clients)
// use, so that --join can name ordinary node URLs. Requests must be signed
// with the cluster secret.
const (
	PathJoin = "/api/v1/cluster/join"
	PathPeer = "/api/v1/cluster/peer"
)

// codeNotLeader is the error code of a leader-only request that reached a
// follower; the sender retries at the current leader.
const codeNotLeader = "not_leader"

// ErrNotLeader is returned by Backend leader-only methods on a follower.
var ErrNotLeader = errors.New("cluster: this node is not the leader")

// ErrNotApplied wraps failures after which a forwarded command was
// certainly not applied (the leader refused it as a follower, or the
// connection could not be made), so sending it again is safe and cannot
// be confused with an unknown outcome.
var ErrNotApplied = errors.New("cluster: command not applied")

// JoinRequest asks the leader to make a node a voter (or to update the
// address and URL of a node that is one already).
type JoinRequest struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	URL      string `json:"url"`
	// LogFormat is the newest log format the joining node reads; 0 from
	// a version that predates the field (it reads format 1 only).
	LogFormat int `json:"log_format,omitempty"`
	// ClusterVersionMax is the newest cluster version the joining node
	// knows; 0 from a version that predates the field (it runs cluster
	// version 1 only). Release v0.1.0 decodes a join strictly and refuses
	// the field, so JoinVia sends it again without it when a member says
	// so (such a member leads a cluster at version 1, which every joiner
	// may join).
	ClusterVersionMax int `json:"cluster_version_max,omitempty"`
}

// PeerInfo is what a node tells others during formation.
type PeerInfo struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	URL      string `json:"url"`
	// HasState is true once the node belongs to a cluster (bootstrapped or
	// joined).
	HasState bool `json:"has_state"`
	// LeaderID is the leader this node knows, if any.
	LeaderID string `json:"leader_id,omitempty"`
	// LogFormat is the newest log format this node reads (0: format 1
	// only, a version that predates the field).
	LogFormat int `json:"log_format,omitempty"`
	// Clock is the node's view of the time, for a leader that checks its
	// own clock against a majority (nil from a version that predates it).
	Clock *ClockReport `json:"clock,omitempty"`
	// Version is the node's release ("" from a version that predates the
	// field, such as v0.1.0).
	Version string `json:"version,omitempty"`
	// ClusterVersionMax is the newest cluster version the node knows (0
	// from a version that predates the field: it knows version 1 only).
	// Older nodes read PeerInfo leniently (json.Unmarshal), so the new
	// fields are ignored by them.
	ClusterVersionMax int `json:"cluster_version_max,omitempty"`
}

// MaxClusterVersion is the newest cluster version the node knows: 1 for a
// node that does not say (every release up to v0.1.0).
func (p PeerInfo) MaxClusterVersion() int { return max(p.ClusterVersionMax, 1) }

// FinalizeAnswer is the leader's answer to a finalize-upgrade: the cluster
// version before and after (equal when nothing changed) and what happened,
// in words for the operator.
type FinalizeAnswer struct {
	From    int    `json:"from"`
	To      int    `json:"to"`
	Message string `json:"message"`
	// Index is the log index of the last raise (0 when nothing changed):
	// the node that forwarded the request waits for it before answering.
	Index uint64 `json:"index,omitempty"`
}

// ClockReport is what a node says about time when asked: its wall clock,
// and the cluster time it can vouch for by its monotonic clock since it
// last saw the replicated clock advance.
type ClockReport struct {
	// Wall is the node's wall clock, Unix nanoseconds.
	Wall int64 `json:"wall"`
	// Cluster is the cluster time this node vouches for, Unix
	// nanoseconds; meaningful only when Fresh.
	Cluster int64 `json:"cluster"`
	// Fresh is true once this process has seen the replicated clock
	// advance while caught up with the log, so Cluster is measured
	// rather than guessed.
	Fresh bool `json:"fresh"`
}

type idRequest struct {
	ID string `json:"id"`
	// Origin is the source address of the operator request behind a
	// removal or transfer, for the audit trail (restarea.WithOrigin). The
	// node sends it only once the cluster writes log format 3, which
	// every member reads.
	Origin string `json:"origin,omitempty"`
}

type indexResponse struct {
	Index uint64 `json:"index"`
}
