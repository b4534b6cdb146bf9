package node

import (
	"github.com/hashicorp/raft"

	"github.com/restarea/restarea/fsm"
)

// raftTransport is raft's network transport with two of its paths turned
// off, each because it breaks raft's guarantees in hashicorp/raft v1.7.2.
// Raft still exchanges the same RPCs over the same connections.
//
// No heartbeat fast path. The network transport hands a heartbeat to a
// handler raft installs (SetHeartbeatHandler), which runs raft's
// appendEntries on the transport's goroutine, beside raft's main loop,
// although appendEntries must only run on it. A heartbeat from a newer
// leader then raises the term of a node that still runs its leader loop,
// and that loop stamps the entries it appends next with the new term
// (dispatchLogs reads the current term): two different entries at one
// index with one term, so the node's log passes the new leader's
// consistency check, is never truncated, and the node applies commands
// the cluster never committed (hashicorp/raft#695). The compose chaos run
// hit it: a leader paused for 4 s woke with queued posts and stored its
// own entries for seven request_ids that the other nodes had stored
// under other ids. Without the handler every heartbeat goes to raft's
// consumer channel, like every other RPC, and raft's main loop handles
// it; raft's in-memory transport has never had the fast path. The cost
// is that a follower whose main loop is held by a slow disk answers
// heartbeats late, as it already answers appends.
//
// No pipeline. Raft's pipeline can wedge replication to a follower for
// good: when the follower answers an append with Success=false — a
// follower whose disk is full does so on every append, and any follower
// whose log diverges does so once — pipelineDecode returns and nothing
// reads the pipeline's done channel any more, while pipelineReplicate may
// pick its trigger over the decoder's exit and send once more, parking on
// the in-progress channel (both channels are unbuffered with the default
// MaxRPCsInFlight of 2). The follower then never gets another entry
// (heartbeats still flow, so nothing times out), and the leader's
// Shutdown waits forever for that goroutine. TestDiskFullLeader hung
// there; grafana/pyroscope#5518 describes the same deadlock. Without a
// pipeline raft replicates with one AppendEntries call at a time per
// follower (up to MaxAppendEntries entries each), which the leader's
// batching keeps full.
//
// No damaged command leaves. AppendEntries checks the checksum of every
// command it sends (logcheck.go) and refuses to send one that does not
// match, reporting it to damaged: a leader whose raft.db rotted stops
// instead of handing its damage to the followers.
type raftTransport struct {
	*raft.NetworkTransport
	damaged func(*fsm.CorruptError)
}

// AppendEntries sends args unless one of its commands is damaged, which it
// reports instead (raft retries the follower later; the node stops).
func (t raftTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	for _, l := range args.Entries {
		if c := checkEntry(l); c != nil {
			t.damaged(c)
			return c
		}
	}
	return t.NetworkTransport.AppendEntries(id, target, args, resp)
}

// SetHeartbeatHandler installs nothing: heartbeats reach raft's main loop
// through Consumer.
func (raftTransport) SetHeartbeatHandler(func(raft.RPC)) {}

// AppendEntriesPipeline reports that pipelining is not supported, so raft
// uses synchronous AppendEntries.
func (raftTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}
