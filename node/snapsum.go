package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/restarea/restarea/fsm"
)

// Raft's file snapshot store keeps each snapshot in a directory of its own,
// DATA-DIR/snapshots/<id>/, as state.bin (the state file) and meta.json
// (index, term, configuration, size and a CRC-64 of state.bin). Raft checks
// state.bin against that CRC-64 when it opens a snapshot, reading the whole
// file before it hands any byte to the state machine or to a follower;
// nothing covers meta.json. checkedSnapshots adds a sidecar file,
// snapshotSums, with the CRC-32C of meta.json (and of state.bin), written
// once raft has moved the snapshot into place, and checks it whenever raft
// lists or opens snapshots (node/DESIGN.md, "Damaged snapshots").

// snapshotSums is the sidecar file in each snapshot's directory. Raft
// reads only meta.json and state.bin there and removes the whole directory
// when it reaps a snapshot, so releases that do not know the file (v0.1.0,
// the same raft) ignore it.
const snapshotSums = "checksums.json"

// snapshotSumsTmp is the sidecar while it is written: a crash leaves it,
// never a torn snapshotSums.
const snapshotSumsTmp = "checksums.json.tmp"

// castagnoli is the table of fsm.Checksum, for the streaming CRC of
// state.bin as the sink writes it.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sums is the content of snapshotSums: the CRC-32C of each file, in hex.
type sums struct {
	Meta  string `json:"meta.json"`
	State string `json:"state.bin"`
}

// checkedSnapshots is raft's file snapshot store with its meta.json
// covered by a checksum. A snapshot without the sidecar — written by an
// earlier release, or by this one when the machine stopped between raft's
// rename and the sidecar — is accepted as before, unchecked.
type checkedSnapshots struct {
	*raft.FileSnapshotStore
	dir string // DATA-DIR/snapshots

	// report is told the first damaged file met (nil: nobody is told).
	report func(error)
	mu     sync.Mutex
	first  error
}

// openSnapshots opens the snapshot store of dataDir, retaining 2 snapshots,
// with the damage it meets told to report (which may be nil).
func openSnapshots(dataDir string, logger hclog.Logger, report func(error)) (*checkedSnapshots, error) {
	store, err := raft.NewFileSnapshotStoreWithLogger(dataDir, 2, logger) // keeps them in DATA-DIR/snapshots
	if err != nil {
		return nil, err
	}
	return &checkedSnapshots{FileSnapshotStore: store, dir: filepath.Join(dataDir, "snapshots"), report: report}, nil
}

// damaged returns the first damaged file met, as a *fsm.CorruptError, or nil.
func (s *checkedSnapshots) damaged() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

// corrupt records err, tells report the first time, and returns err.
func (s *checkedSnapshots) corrupt(err error) error {
	s.mu.Lock()
	first := s.first == nil
	if first {
		s.first = err
	}
	s.mu.Unlock()
	if first && s.report != nil {
		s.report(err)
	}
	return err
}

// Create implements raft.SnapshotStore: the sink hashes what it writes and
// seals the snapshot with its sidecar once raft has moved it into place.
func (s *checkedSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.FileSnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return &checkedSink{SnapshotSink: sink, store: s, state: crc32.New(castagnoli)}, nil
}

// List implements raft.SnapshotStore. Every snapshot directory with a
// sidecar is checked first — also those whose meta.json no longer parses,
// which raft would skip silently and so fall back on an older snapshot.
func (s *checkedSnapshots) List() ([]*raft.SnapshotMeta, error) {
	dirs, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if !d.IsDir() || strings.HasSuffix(d.Name(), ".tmp") {
			continue
		}
		if _, err := s.checkMeta(d.Name()); err != nil {
			return nil, err
		}
	}
	return s.FileSnapshotStore.List()
}

// Open implements raft.SnapshotStore: meta.json is checked against the
// sidecar, and raft then checks state.bin against its CRC-64 (reading it
// whole) before the first byte is returned. Either mismatch is a
// *fsm.CorruptError, reported.
func (s *checkedSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	want, err := s.checkMeta(id)
	if err != nil {
		return nil, nil, err
	}
	meta, rc, err := s.FileSnapshotStore.Open(id)
	// Raft's only sign of a state.bin that does not match its CRC-64
	// (hashicorp/raft v1.7.2 file_snapshot.go; TestDamagedSnapshotStateStopsTheNode
	// fails if that changes).
	if err != nil && err.Error() == "CRC mismatch" {
		got, herr := fileChecksum(filepath.Join(s.dir, id, "state.bin"))
		if herr != nil {
			return nil, nil, fmt.Errorf("snapshot %s: state.bin does not match its CRC-64, and cannot be read again: %w", id, herr)
		}
		return nil, nil, s.corrupt(&fsm.CorruptError{
			File: s.rel(id, "state.bin"), Index: snapshotIndex(id),
			Where: "its CRC-64 in meta.json does not match", Want: want.state, Got: got,
		})
	}
	return meta, rc, err
}

// stored is what a sidecar holds, parsed.
type stored struct{ meta, state uint32 }

// checkMeta checks meta.json of snapshot id against its sidecar, and
// returns the sums the sidecar holds (zero when it has none).
func (s *checkedSnapshots) checkMeta(id string) (stored, error) {
	var st stored
	b, err := os.ReadFile(filepath.Join(s.dir, id, snapshotSums))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil // an earlier release's snapshot
	}
	if err != nil {
		return st, fmt.Errorf("snapshot %s: %w", id, err)
	}
	bad := func(file, where string, want, got uint32) error {
		return s.corrupt(&fsm.CorruptError{File: s.rel(id, file), Index: snapshotIndex(id), Where: where, Want: want, Got: got})
	}
	var j sums
	if err := json.Unmarshal(b, &j); err != nil {
		return st, bad(snapshotSums, "not a checksum file", 0, fsm.Checksum(b))
	}
	if st.meta, err = parseSum(j.Meta); err != nil {
		return st, bad(snapshotSums, "meta.json: "+err.Error(), 0, fsm.Checksum(b))
	}
	if st.state, err = parseSum(j.State); err != nil {
		return st, bad(snapshotSums, "state.bin: "+err.Error(), 0, fsm.Checksum(b))
	}
	meta, err := os.ReadFile(filepath.Join(s.dir, id, "meta.json"))
	if errors.Is(err, os.ErrNotExist) {
		// Raft is reaping the snapshot (it removes the whole directory,
		// which List may see half-way), or the name was lost: raft skips
		// a directory without meta.json either way.
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("snapshot %s: %w", id, err)
	}
	if got := fsm.Checksum(meta); got != st.meta {
		return st, bad("meta.json", "", st.meta, got)
	}
	return st, nil
}

// seal writes the sidecar of snapshot id, whose state.bin has the
// CRC-32C state: under a temporary name, synced, renamed, and the
// snapshot's directory synced, so that a crash leaves either no sidecar
// (the snapshot is accepted unchecked) or the whole one.
func (s *checkedSnapshots) seal(id string, state uint32) error {
	dir := filepath.Join(s.dir, id)
	meta, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return fmt.Errorf("snapshot %s: checksum: %w", id, err)
	}
	b, err := json.Marshal(sums{Meta: fmt.Sprintf("%08x", fsm.Checksum(meta)), State: fmt.Sprintf("%08x", state)})
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, snapshotSumsTmp)
	if err := writeSynced(tmp, b, 0o640); err != nil {
		return fmt.Errorf("snapshot %s: checksum: %w", id, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, snapshotSums)); err != nil {
		return fmt.Errorf("snapshot %s: checksum: %w", id, err)
	}
	if err := fsyncDir(dir); err != nil {
		return fmt.Errorf("snapshot %s: checksum: %w", id, err)
	}
	return nil
}

// rel is file of snapshot id, relative to the data directory.
func (s *checkedSnapshots) rel(id, file string) string {
	return filepath.ToSlash(filepath.Join("snapshots", id, file))
}

// snapshotIndex is the log index in a snapshot id (term-index-millis, as
// raft names them), or 0: read from the name, since meta.json may be the
// damaged file.
func snapshotIndex(id string) uint64 {
	parts := strings.Split(id, "-")
	if len(parts) != 3 {
		return 0
	}
	i, _ := strconv.ParseUint(parts[1], 10, 64)
	return i
}

// parseSum parses a CRC-32C written as 8 hex digits.
func parseSum(s string) (uint32, error) {
	if len(s) != 8 {
		return 0, fmt.Errorf("checksum %q is not 8 hex digits", s)
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("checksum %q is not 8 hex digits", s)
	}
	return uint32(v), nil
}

// fileChecksum is the CRC-32C of the file at path.
func fileChecksum(path string) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, f); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// checkedSink is raft's sink with the CRC-32C of state.bin computed as it
// is written, and the sidecar written when it closes.
type checkedSink struct {
	raft.SnapshotSink
	store *checkedSnapshots
	state hash.Hash32
}

// Write implements raft.SnapshotSink.
func (s *checkedSink) Write(b []byte) (int, error) {
	n, err := s.SnapshotSink.Write(b)
	s.state.Write(b[:n])
	return n, err
}

// Close implements raft.SnapshotSink: raft's sink closes (the snapshot
// is moved into place and older ones reaped), then the sidecar is written.
// A failure to write it fails the snapshot as raft sees it (its log is not
// compacted), though the snapshot stays, unchecked, as an earlier
// release's would.
func (s *checkedSink) Close() error {
	if err := s.SnapshotSink.Close(); err != nil {
		return err
	}
	return s.store.seal(s.ID(), s.state.Sum32())
}

// snapshotDamaged is told the first damaged snapshot file met: the node
// stops (onHalt counts it) as for a damaged log entry (onHalt), since
// sending or restoring it would spread or apply bytes no one wrote. At
// start, open also refuses with it.
func (n *Node) snapshotDamaged(err error) { n.onHalt(err) }
