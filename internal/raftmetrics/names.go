package raftmetrics

// unit says how a raft value converts to its new series.
type unit int

const (
	// same: the value is already in the new series' unit (counts, bytes,
	// ratios).
	same unit = iota
	// millis: raft reports milliseconds; the new series has seconds.
	millis
)

// rename is what one of raft's go-metrics keys becomes on /metrics.
type rename struct {
	// Old is the name go-metrics' sink gives the key ("raft.commitTime" →
	// raft_commitTime); it stays on /metrics, deprecated, for one release.
	Old string
	// New is the series that replaces it. When Existing is set it is a
	// restarea_ series the node already exports, and nothing new is added;
	// when it equals Old the name already follows the conventions and only
	// its help changes.
	New      string
	Existing bool
	Unit     unit
	// Help says what the new series measures.
	Help string
}

// DeprecatedHelp is the help text of a renamed series' old name.
func (r rename) DeprecatedHelp() string {
	h := "Deprecated: use " + r.New + "; removed in the release after next."
	if r.Unit == millis {
		h += " In milliseconds."
	}
	return h
}

// renames covers every key hashicorp/raft v1.7.2 and raft-boltdb v2.3.1
// report through go-metrics (the per-peer copies of the replication
// timers with the peer in the name are off: the node sets
// NoLegacyTelemetry). Raft's timers and samples are summaries, its
// counters counters, its gauges gauges, each keeping its type.
var renames = []rename{
	// Leader: commits and log dispatch.
	{"raft_commitTime", "raft_commit_seconds", false, millis, "Leader: time from dispatching a log entry to its commit by a quorum."},
	{"raft_commitNumLogs", "raft_commit_logs", false, same, "Leader: log entries in the last group committed at once."},
	{"raft_leader_dispatchLog", "raft_leader_dispatch_log_seconds", false, millis, "Leader: time to write a batch of new log entries to its own log store."},
	{"raft_leader_dispatchNumLogs", "raft_leader_dispatch_logs", false, same, "Leader: log entries in the last batch written to its own log store."},
	{"raft_leader_lastContact", "raft_leader_last_contact_seconds", false, millis, "Leader: the longest any reachable follower has gone without contact, sampled at each lease check."},
	{"raft_leader_oldestLogAge", "raft_leader_oldest_log_age_seconds", false, millis, "Leader: age of the oldest entry in its log store (how far back the log reaches before compaction)."},
	{"raft_peers", "raft_peers", false, same, "Servers (voters and non-voters) in the latest raft configuration."},
	// API calls on this node.
	{"raft_apply", "raft_apply_total", false, same, "Log entries (commands) handed to raft's Apply on this node."},
	{"raft_barrier", "raft_barrier_total", false, same, "Barriers handed to raft on this node."},
	{"raft_verify_leader", "raft_verify_leader_total", false, same, "Leadership verifications (a round of contact with a quorum) requested on this node."},
	{"raft_restore", "raft_restore_total", false, same, "User snapshots restored into raft on this node."},
	{"raft_restoreUserSnapshot", "raft_restore_user_snapshot_seconds", false, millis, "Time to restore a user snapshot into raft."},
	// State changes.
	{"raft_state_follower", "raft_state_follower_total", false, same, "Times this node entered the follower state."},
	{"raft_state_candidate", "raft_state_candidate_total", false, same, "Times this node entered the candidate state (started an election)."},
	{"raft_state_leader", "raft_state_leader_total", false, same, "Times this node became leader."},
	{"raft_transition_heartbeat_timeout", "raft_transition_heartbeat_timeout_total", false, same, "Times this node, as follower, heard from no leader within the heartbeat timeout and became a candidate."},
	{"raft_transition_leader_lease_timeout", "raft_transition_leader_lease_timeout_total", false, same, "Times this node, as leader, lost contact with a quorum for the lease timeout and stepped down."},
	{"raft_candidate_electSelf", "raft_candidate_elect_self_seconds", false, millis, "Candidate: time to vote for itself and send vote requests."},
	{"raft_candidate_preElectSelf", "raft_candidate_pre_elect_self_seconds", false, millis, "Candidate: time to send pre-vote requests."},
	// Replication, on the leader, per follower (peer_id).
	{"raft_replication_appendEntries_rpc", "raft_replication_append_entries_rpc_seconds", false, millis, "Leader: round-trip time of an AppendEntries RPC to the follower peer_id."},
	{"raft_replication_appendEntries_logs", "raft_replication_append_entries_logs_total", false, same, "Leader: log entries sent to the follower peer_id."},
	{"raft_replication_heartbeat", "raft_replication_heartbeat_seconds", false, millis, "Leader: round-trip time of a heartbeat to the follower peer_id."},
	{"raft_replication_installSnapshot", "raft_replication_install_snapshot_seconds", false, millis, "Leader: time to send a snapshot to the follower peer_id."},
	// RPCs this node serves.
	{"raft_rpc_appendEntries", "raft_rpc_append_entries_seconds", false, millis, "Time to handle an AppendEntries RPC from the leader."},
	{"raft_rpc_appendEntries_storeLogs", "raft_rpc_append_entries_store_logs_seconds", false, millis, "Follower: time to write the entries of an AppendEntries RPC to the log store."},
	{"raft_rpc_appendEntries_processLogs", "raft_rpc_append_entries_process_logs_seconds", false, millis, "Follower: time to hand the newly committed entries of an AppendEntries RPC to the state machine."},
	{"raft_rpc_processHeartbeat", "raft_rpc_process_heartbeat_seconds", false, millis, "Time to handle a heartbeat from the leader."},
	{"raft_rpc_requestVote", "raft_rpc_request_vote_seconds", false, millis, "Time to handle a vote or pre-vote request."},
	{"raft_rpc_installSnapshot", "raft_rpc_install_snapshot_seconds", false, millis, "Follower: time to receive and install a snapshot from the leader."},
	// The network transport.
	{"raft_net_getRPCType", "raft_net_get_rpc_type_seconds", false, millis, "Time to read the type byte of an incoming RPC (includes waiting for the next one on the connection)."},
	{"raft_net_rpcDecode", "raft_net_rpc_decode_seconds", false, millis, "Time to decode an incoming RPC, by rpcType."},
	{"raft_net_rpcEnqueue", "raft_net_rpc_enqueue_seconds", false, millis, "Time for an incoming RPC to be taken by raft's main loop, by rpcType."},
	{"raft_net_rpcRespond", "raft_net_rpc_respond_seconds", false, millis, "Time from handing an incoming RPC to raft to its response, by rpcType."},
	// The state machine and snapshots.
	{"raft_fsm_enqueue", "raft_fsm_enqueue_seconds", false, millis, "Time to queue a group of committed entries for the state machine."},
	{"raft_fsm_apply", "raft_fsm_apply_seconds", false, millis, "Time to apply one entry to a state machine that does not batch (the node's batches: restarea_fsm_apply_seconds)."},
	{"raft_fsm_applyBatch", "restarea_fsm_apply_seconds", true, millis, ""},
	{"raft_fsm_applyBatchNum", "restarea_fsm_batch_size", true, same, ""},
	{"raft_fsm_store_config", "raft_fsm_store_config_seconds", false, millis, "Time to hand a configuration entry to the state machine."},
	{"raft_fsm_snapshot", "raft_fsm_snapshot_seconds", false, millis, "Time for the state machine to start a snapshot (capture the point to write)."},
	{"raft_fsm_restore", "raft_fsm_restore_seconds", false, millis, "Time for the state machine to restore a snapshot."},
	{"raft_fsm_lastRestoreDuration", "raft_fsm_last_restore_seconds", false, millis, "How long the state machine's last snapshot restore took."},
	{"raft_snapshot_takeSnapshot", "raft_snapshot_take_seconds", false, millis, "Time to take a snapshot, from asking the state machine to compacting the log."},
	{"raft_snapshot_create", "raft_snapshot_create_seconds", false, millis, "Time to create the snapshot's file in the snapshot store."},
	{"raft_snapshot_persist", "raft_snapshot_persist_seconds", false, millis, "Time for the state machine to write a snapshot to the snapshot store."},
	{"raft_compactLogs", "raft_compact_logs_seconds", false, millis, "Time to compact the log after a snapshot."},
	{"raft_removeOldLogs", "raft_remove_old_logs_seconds", false, millis, "Time to remove log entries older than a restored snapshot."},
	{"raft_thread_main_saturation", "raft_thread_main_saturation_ratio", false, same, "Share of time raft's main goroutine was busy (0 to 1), sampled each second."},
	{"raft_thread_fsm_saturation", "raft_thread_fsm_saturation_ratio", false, same, "Share of time raft's state-machine goroutine was busy (0 to 1), sampled each second."},
	// raft-boltdb, the log store.
	{"raft_boltdb_getLog", "raft_boltdb_get_log_seconds", false, millis, "Time to read one entry from the log store."},
	{"raft_boltdb_storeLogs", "raft_boltdb_store_logs_seconds", false, millis, "Time to write a batch of entries to the log store (with its fsync)."},
	{"raft_boltdb_logSize", "raft_boltdb_log_size_bytes", false, same, "Size of an entry written to the log store."},
	{"raft_boltdb_logsPerBatch", "raft_boltdb_logs_per_batch", false, same, "Entries per batch written to the log store."},
	{"raft_boltdb_logBatchSize", "raft_boltdb_log_batch_size_bytes", false, same, "Size of a batch of entries written to the log store."},
	{"raft_boltdb_writeCapacity", "raft_boltdb_write_capacity_logs_per_second", false, same, "Entries per second the log store could take at the speed of the last batch."},
	{"raft_boltdb_numFreePages", "raft_boltdb_free_pages", false, same, "Free pages in the log store's file."},
	{"raft_boltdb_numPendingPages", "raft_boltdb_pending_pages", false, same, "Pages of the log store's file waiting to be freed."},
	{"raft_boltdb_freePageBytes", "raft_boltdb_free_page_bytes", false, same, "Bytes in the log store's free pages."},
	{"raft_boltdb_freelistBytes", "raft_boltdb_freelist_bytes", false, same, "Bytes the log store's free list uses."},
	{"raft_boltdb_totalReadTxn", "raft_boltdb_read_txn_total", false, same, "Read transactions on the log store."},
	{"raft_boltdb_openReadTxn", "raft_boltdb_open_read_txn", false, same, "Read transactions open on the log store."},
	{"raft_boltdb_txstats_pageCount", "raft_boltdb_txstats_pages", false, same, "Pages the log store's transactions allocated."},
	{"raft_boltdb_txstats_pageAlloc", "raft_boltdb_txstats_page_alloc_bytes", false, same, "Bytes the log store's transactions allocated for pages."},
	{"raft_boltdb_txstats_cursorCount", "raft_boltdb_txstats_cursors_total", false, same, "Cursors the log store's transactions created."},
	{"raft_boltdb_txstats_nodeCount", "raft_boltdb_txstats_nodes_total", false, same, "Node allocations in the log store's transactions."},
	{"raft_boltdb_txstats_nodeDeref", "raft_boltdb_txstats_node_derefs_total", false, same, "Node dereferences in the log store's transactions."},
	{"raft_boltdb_txstats_rebalance", "raft_boltdb_txstats_rebalances_total", false, same, "Node rebalances in the log store's transactions."},
	{"raft_boltdb_txstats_rebalanceTime", "raft_boltdb_txstats_rebalance_seconds", false, millis, "Time the log store's transactions spent rebalancing, per report."},
	{"raft_boltdb_txstats_split", "raft_boltdb_txstats_splits_total", false, same, "Node splits in the log store's transactions."},
	{"raft_boltdb_txstats_spill", "raft_boltdb_txstats_spills_total", false, same, "Node spills in the log store's transactions."},
	{"raft_boltdb_txstats_spillTime", "raft_boltdb_txstats_spill_seconds", false, millis, "Time the log store's transactions spent spilling, per report."},
	{"raft_boltdb_txstats_write", "raft_boltdb_txstats_writes_total", false, same, "Page writes by the log store's transactions."},
	{"raft_boltdb_txstats_writeTime", "raft_boltdb_txstats_write_seconds", false, millis, "Time the log store's transactions spent writing, per report."},
}

// byOld indexes renames by old name.
var byOld = func() map[string]rename {
	m := make(map[string]rename, len(renames))
	for _, r := range renames {
		m[r.Old] = r
	}
	return m
}()

// Rename is the new name of raft's series old, and whether it is one the
// node already exports under restarea_ (so that nothing new is added).
// ok is false for a name the table does not cover.
func Rename(old string) (newName string, existing, ok bool) {
	r, ok := byOld[old]
	return r.New, r.Existing, ok
}
