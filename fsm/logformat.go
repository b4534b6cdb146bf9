package fsm

import (
	bolt "go.etcd.io/bbolt"
)

// OpEnableLogV2 switches the cluster to log format 2 (EncodeV2). It has
// no payload. A binary that predates it refuses it as an unknown command
// without changing its state — but the leader only proposes it once every
// member has said it reads version 2, and refuses older joiners after.
const OpEnableLogV2 Op = "enable_log_v2"

// OpEnableLogV3 switches the cluster to log format 3: format 2 plus the
// audit trail. From the command that switches on, admin commands write
// audit records and may carry Origin and Audit (as JSON, see EncodeV2).
// Before it, no command writes one, so an older log replays exactly as
// it was first applied. Proposed, like OpEnableLogV2, only once every
// member reads format 3.
const OpEnableLogV3 Op = "enable_log_v3"

// LogFormatMax is the newest log format this binary reads.
const LogFormatMax = 3

var kLogFormat = []byte("log_format")

// applyEnableLog raises the log format to v; it never lowers it.
func applyEnableLog(tx *bolt.Tx, v int) (*Result, error) {
	if cur, err := readLogFormat(tx); err != nil || cur >= v {
		return &Result{}, err
	}
	return &Result{}, putU64(tx, bMeta, kLogFormat, uint64(v))
}

func readLogFormat(tx *bolt.Tx) (int, error) {
	v, err := get(tx, bMeta, kLogFormat)
	if v == nil || err != nil {
		return 1, err
	}
	return int(readU64(v)), nil
}

// LogFormat is the log format every member of the cluster is known to
// read (1 until OpEnableLogV2 is applied): what a leader may write.
func (f *FSM) LogFormat() int { return int(f.logFormat.Load()) }
