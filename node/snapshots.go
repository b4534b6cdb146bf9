package node

import (
	"time"

	"github.com/hashicorp/raft"
)

// snapshotShare sets how far the snapshot threshold grows with the store:
// a snapshot copies the whole state file, so with a fixed threshold its
// cost per new entry grows with the store (8,192 entries per copy of a
// 1 GiB file is 130 KiB written per post). Taking one only after the
// log has grown by a quarter of the entries stored keeps that cost per
// post bounded, for a raft log at most about a quarter of the state.
const snapshotShare = 4

// snapshotThreshold is the threshold for a store of entries.
func snapshotThreshold(configured, entries uint64) uint64 {
	return max(configured, entries/snapshotShare)
}

// tuneSnapshots keeps raft's snapshot threshold in step with the size of
// the store, checking every interval.
func (n *Node) tuneSnapshots(interval time.Duration) {
	defer n.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-n.stop:
				return
			case <-t.C:
			}
		}
		entries, err := n.fsm.Count()
		if err != nil {
			continue
		}
		n.raftConfMu.Lock() // watchDisk changes other fields of the same config
		cur := n.raft.ReloadableConfig()
		want := snapshotThreshold(n.cfg.SnapshotThreshold, entries)
		// Move only on a real change, not on every entry.
		if want == cur.SnapshotThreshold || (want > cur.SnapshotThreshold && want < cur.SnapshotThreshold+cur.SnapshotThreshold/5) {
			n.raftConfMu.Unlock()
			continue
		}
		next := raft.ReloadableConfig{
			TrailingLogs: cur.TrailingLogs, SnapshotInterval: cur.SnapshotInterval, SnapshotThreshold: want,
			HeartbeatTimeout: cur.HeartbeatTimeout, ElectionTimeout: cur.ElectionTimeout,
		}
		err = n.raft.ReloadConfig(next)
		n.raftConfMu.Unlock()
		if err != nil {
			n.log.Warn("snapshot threshold not changed", "want", want, "err", err)
			continue
		}
		n.log.Info("snapshot threshold follows the store", "entries", entries, "snapshot_threshold", want)
	}
}
