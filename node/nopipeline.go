package node

import "github.com/hashicorp/raft"

// noPipeline is raft's network transport without pipelined replication.
//
// hashicorp/raft's pipeline can wedge replication to a follower for good
// (v1.7.2): when the follower answers an append with Success=false — a
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
type noPipeline struct {
	*raft.NetworkTransport
}

// AppendEntriesPipeline reports that pipelining is not supported, so raft
// uses synchronous AppendEntries.
func (noPipeline) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}
