package fsm

import (
	bolt "go.etcd.io/bbolt"
)

// OpEnableLogV2 switches the cluster to log format 2 (EncodeV2). It has
// no payload. A binary that predates it refuses it as an unknown command
// without changing its state — but the leader only proposes it once every
// member has said it reads version 2, and refuses older joiners after.
const OpEnableLogV2 Op = "enable_log_v2"

// LogFormatMax is the newest log format this binary reads.
const LogFormatMax = 2

var kLogFormat = []byte("log_format")

func applyEnableLogV2(tx *bolt.Tx) (*Result, error) {
	return &Result{}, tx.Bucket(bMeta).Put(kLogFormat, u64(2))
}

func readLogFormat(tx *bolt.Tx) int {
	if v := tx.Bucket(bMeta).Get(kLogFormat); v != nil {
		return int(readU64(v))
	}
	return 1
}

// LogFormat is the log format every member of the cluster is known to
// read (1 until OpEnableLogV2 is applied): what a leader may write.
func (f *FSM) LogFormat() int { return int(f.logFormat.Load()) }
