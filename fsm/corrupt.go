package fsm

import (
	"errors"
	"fmt"
	"hash/crc32"
)

// castagnoli is the CRC-32C table every checksum of rest.area uses (as
// etcd's WAL does per record): hardware-accelerated on amd64 and arm64.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C of b.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// ErrCorrupt matches every CorruptError (errors.Is).
var ErrCorrupt = errors.New("checksum mismatch")

// CorruptError reports bytes on this node's disk whose checksum does not
// match: a flipped bit in the raft log, the state file, a snapshot or the
// search index. Only this node's copy is damaged — the others hold their
// own — so the node must not go on: applying or serving the damaged bytes
// would let it diverge from the cluster silently. The state machine stops
// applying at the entry that met it (as for an UnknownClusterVersionError)
// and the node stops; the way back is to wipe the node's data directory and
// join it again, and the cluster sends it a snapshot (docs/disasters.md,
// "When a node's disk rots").
type CorruptError struct {
	// File is the damaged file, relative to the data directory
	// ("raft.db", "state.db", "snapshots/<id>/meta.json", …).
	File string
	// Index is the log index of the damaged entry or of the command that
	// met the damaged record, or 0.
	Index uint64
	// Where locates the damage inside File (a bucket and key, a field), or "".
	Where string
	// Want and Got are the stored and the computed checksums.
	Want, Got uint32
}

func (e *CorruptError) Error() string {
	at := e.File
	if e.Where != "" {
		at += " (" + e.Where + ")"
	}
	if e.Index != 0 {
		at += fmt.Sprintf(" at log index %d", e.Index)
	}
	return fmt.Sprintf("%s: %s is damaged (stored CRC-32C %08x, computed %08x): this node stopped so that it serves and applies nothing from it; wipe its data directory and join it again (docs/disasters.md, \"When a node's disk rots\")",
		ErrCorrupt, at, e.Want, e.Got)
}

// Is makes errors.Is(err, ErrCorrupt) true for every CorruptError.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// halting reports whether err stops the state machine for good: a cluster
// version this binary does not know, or damaged bytes.
func halting(err error) bool {
	var u *UnknownClusterVersionError
	return errors.As(err, &u) || errors.Is(err, ErrCorrupt)
}

// stoppedAt is a halting error met at position pos of a batch: the entries
// before it are applied, it and those after it are not.
type stoppedAt struct {
	err error
	pos int
}

func (s *stoppedAt) Error() string { return s.err.Error() }
func (s *stoppedAt) Unwrap() error { return s.err }
