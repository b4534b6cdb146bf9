package node

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/raftlog"
	"github.com/restarea/restarea/internal/search"
	"github.com/restarea/restarea/transport"
)

// Recovery from a lost majority (docs/disasters.md). Both functions work
// on the data directory of a stopped node: the files are opened with a
// short lock timeout, so a running node makes them fail instead of wait.

// Inspection is what a stopped node's data directory holds: what an
// operator compares across the survivors to choose the one to recover.
type Inspection struct {
	NodeID string `json:"node_id"`
	// FirstIndex and LastIndex bound the entries in the raft log (0 when
	// it is empty, e.g. just after a snapshot compacted it).
	FirstIndex uint64 `json:"first_index"`
	LastIndex  uint64 `json:"last_index"`
	// Last and LastTerm are the newest entry this node holds, in its log
	// or its newest snapshot: the survivor to choose holds the highest.
	Last     uint64 `json:"last"`
	LastTerm uint64 `json:"last_term"`
	// Snapshot is the newest snapshot, nil when there is none.
	Snapshot *InspectedSnapshot `json:"snapshot,omitempty"`
	// Servers is the newest configuration in the log or snapshot, at
	// ConfigurationIndex.
	Servers            []InspectedServer `json:"servers"`
	ConfigurationIndex uint64            `json:"configuration_index"`
	// StateApplied is the last index applied to the state file.
	StateApplied uint64 `json:"state_applied"`
	// Lineage is the lineage of the node's data ("0" for a cluster never
	// recovered), Parent the one it was recovered from: survivors to
	// choose from hold the same lineage.
	Lineage string `json:"lineage"`
	Parent  string `json:"parent"`
}

// InspectedSnapshot is a snapshot of the raft snapshot store.
type InspectedSnapshot struct {
	ID    string `json:"id"`
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	Size  int64  `json:"size"`
}

// InspectedServer is a member of a raft configuration.
type InspectedServer struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	Voter   bool   `json:"voter"`
}

// RecoverOptions are the options of Recover.
type RecoverOptions struct {
	// RaftAdvertise is the raft address the recovered node will be
	// dialled at; empty keeps the one the configuration holds for it.
	RaftAdvertise string
	// Logger receives raft's lines and progress (discarded when nil).
	Logger *slog.Logger
}

// Recovery is what Recover did.
type Recovery struct {
	Before Inspection `json:"before"`
	// Voter is the node's id and address, the only member of the new
	// configuration.
	Voter InspectedServer `json:"voter"`
	// Index and Term are where the new configuration takes over: every
	// entry of the node's log up to Index is applied and kept.
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	// Entries is how many entries the state holds after it.
	Entries uint64 `json:"entries"`
	// Lineage is the new lineage of the recovered cluster, Parent the one
	// the node held before: machines of the lost majority, still of
	// Parent, are refused by every member (docs/disasters.md).
	Lineage string `json:"lineage"`
	Parent  string `json:"parent"`
}

// lockedErr says what a lock timeout means: a running node holds the file.
func lockedErr(path string, err error) error {
	if errors.Is(err, bbolt.ErrTimeout) {
		return fmt.Errorf("%s is locked: is restarea running on this data directory? Stop it first", path)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// Inspect reads a stopped node's data directory without writing to it.
func Inspect(dataDir string) (Inspection, error) {
	var in Inspection
	id, err := os.ReadFile(filepath.Join(dataDir, "node-id"))
	if err != nil {
		return in, fmt.Errorf("%s holds no node (no node-id file): %w", dataDir, err)
	}
	in.NodeID = strings.TrimSpace(string(id))
	raftPath := filepath.Join(dataDir, "raft.db")
	if _, err := os.Stat(raftPath); err != nil {
		return in, fmt.Errorf("%s holds no raft log: %w", dataDir, err)
	}
	logs, err := raftboltdb.New(raftboltdb.Options{Path: raftPath,
		BoltOptions: &bbolt.Options{ReadOnly: true, Timeout: time.Second}})
	if err != nil {
		return in, lockedErr(raftPath, err)
	}
	defer logs.Close()
	snaps, err := openSnapshots(dataDir, raftlog.New(slog.New(slog.DiscardHandler), "raft"), nil)
	if err != nil {
		return in, fmt.Errorf("snapshot store: %w", err)
	}
	if err := inspectRaft(&in, logs, snaps); err != nil {
		return in, err
	}
	applied, err := fsm.CheckStateFile(filepath.Join(dataDir, "state.db"))
	if err != nil {
		return in, lockedErr(filepath.Join(dataDir, "state.db"), err)
	}
	in.StateApplied = applied
	lin, err := currentLineage(dataDir, logs)
	if err != nil {
		return in, err
	}
	in.Lineage, in.Parent = lin[0].String(), lin[1].String()
	return in, nil
}

// currentLineage is the lineage a stopped node would show: its state
// file's when it holds one, else what its stable store recorded.
func currentLineage(dataDir string, logs *raftboltdb.BoltStore) ([2]transport.Lineage, error) {
	lin, parent, err := fsm.ReadLineage(filepath.Join(dataDir, "state.db"))
	if err != nil {
		return [2]transport.Lineage{}, lockedErr(filepath.Join(dataDir, "state.db"), err)
	}
	if lin != ([transport.LineageSize]byte{}) {
		return [2]transport.Lineage{lin, parent}, nil
	}
	l, err := readStableLineage(logs)
	if err != nil {
		return l, fmt.Errorf("raft log: %w", err)
	}
	return l, nil
}

// inspectRaft fills in what the log and the snapshots say.
func inspectRaft(in *Inspection, logs raft.LogStore, snaps raft.SnapshotStore) error {
	var err error
	if in.FirstIndex, err = logs.FirstIndex(); err != nil {
		return fmt.Errorf("raft log: %w", err)
	}
	if in.LastIndex, err = logs.LastIndex(); err != nil {
		return fmt.Errorf("raft log: %w", err)
	}
	metas, err := snaps.List()
	if err != nil {
		return fmt.Errorf("snapshot store: %w", err)
	}
	if len(metas) > 0 {
		m := metas[0]
		in.Snapshot = &InspectedSnapshot{ID: m.ID, Index: m.Index, Term: m.Term, Size: m.Size}
		in.Last, in.LastTerm = m.Index, m.Term
		in.setServers(m.Configuration, m.ConfigurationIndex)
	}
	if in.LastIndex > in.Last {
		var l raft.Log
		if err := logs.GetLog(in.LastIndex, &l); err != nil {
			return fmt.Errorf("raft log: entry %d: %w", in.LastIndex, err)
		}
		in.Last, in.LastTerm = l.Index, l.Term
	}
	// The newest configuration entry in the log, if newer than the
	// snapshot's: configuration changes are rare, so the walk back from
	// the end stops early in practice and never passes the snapshot.
	for i := in.LastIndex; i >= in.FirstIndex && i > in.ConfigurationIndex && i > 0; i-- {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			return fmt.Errorf("raft log: entry %d: %w", i, err)
		}
		if l.Type == raft.LogConfiguration {
			in.setServers(raft.DecodeConfiguration(l.Data), l.Index)
			break
		}
	}
	return nil
}

// checkLogFile checks the entries first to last of the raft log at path
// (checkLog), opening it read-only.
func checkLogFile(path string, first, last uint64) error {
	logs, err := raftboltdb.New(raftboltdb.Options{Path: path,
		BoltOptions: &bbolt.Options{ReadOnly: true, Timeout: time.Second}})
	if err != nil {
		return lockedErr(path, err)
	}
	defer logs.Close()
	return checkLog(logs, first, last)
}

func (in *Inspection) setServers(c raft.Configuration, index uint64) {
	in.Servers, in.ConfigurationIndex = nil, index
	for _, s := range c.Servers {
		in.Servers = append(in.Servers, InspectedServer{ID: string(s.ID), Address: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
}

// Recover makes a stopped node the single voter of a new configuration,
// from its own log and snapshots (raft.RecoverCluster): every entry in
// its log is applied and kept — entries it held but the lost majority
// had not committed become committed too (they were never acknowledged;
// a client retrying them with the same request_id gets them back) — and
// entries committed only on the lost machines are gone. Its search index
// is rebuilt on the next start. The other nodes then join it as new
// members, wiped.
func Recover(dataDir string, opts RecoverOptions) (Recovery, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	before, err := Inspect(dataDir)
	if err != nil {
		return Recovery{}, err
	}
	rec := Recovery{Before: before, Voter: InspectedServer{ID: before.NodeID, Address: opts.RaftAdvertise, Voter: true}}
	if rec.Voter.Address == "" {
		for _, s := range before.Servers {
			if s.ID == before.NodeID {
				rec.Voter.Address = s.Address
			}
		}
	}
	if rec.Voter.Address == "" {
		return rec, fmt.Errorf("node %s is not in its own last configuration; give the raft address it will be dialled at (--raft-advertise)", before.NodeID)
	}

	raftPath := filepath.Join(dataDir, "raft.db")
	// Every entry RecoverCluster will apply and keep is checked first, on
	// the file opened read-only: a damaged one would be applied into the
	// new configuration's snapshot, or stop the state machine half-way and
	// leave a snapshot without the entries after it.
	first := before.FirstIndex
	if before.Snapshot != nil {
		first = max(first, before.Snapshot.Index+1)
	}
	if err := checkLogFile(raftPath, first, before.LastIndex); err != nil {
		if errors.Is(err, fsm.ErrCorrupt) {
			return rec, fmt.Errorf("recover refused, nothing was changed: %w; this node's log cannot be carried into a new configuration: recover another survivor (compare them with restarea recover --inspect)", err)
		}
		return rec, err
	}
	logs, err := raftboltdb.New(raftboltdb.Options{Path: raftPath,
		BoltOptions: &bbolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType}})
	if err != nil {
		return rec, lockedErr(raftPath, err)
	}
	defer logs.Close()
	hl := raftlog.New(log, "raft")
	snaps, err := openSnapshots(dataDir, hl, nil)
	if err != nil {
		return rec, fmt.Errorf("snapshot store: %w", err)
	}
	// The recovered cluster's new lineage; the old one becomes its parent.
	old, err := currentLineage(dataDir, logs)
	if err != nil {
		return rec, err
	}
	next := [2]transport.Lineage{transport.Lineage(uuid.New()), old[0]}
	if !old[0].IsZero() && len(before.Servers) == 1 && before.Servers[0].ID == before.NodeID {
		// Already the single voter of a recovered lineage: recover ran
		// here before (and may have stopped half-way). Keeping the lineage
		// keeps the lost machines' parent, which they are told stale by.
		next = old
	}
	rec.Lineage, rec.Parent = next[0].String(), next[1].String()
	// The state machine RecoverCluster restores and applies into is the
	// node's own state file: it ends up holding what the new snapshot
	// holds, which the node then starts from.
	state, err := fsm.Open(filepath.Join(dataDir, "state.db"), fsm.Options{Logger: log})
	if err != nil {
		return rec, lockedErr(filepath.Join(dataDir, "state.db"), err)
	}
	defer state.Close()

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(before.NodeID)
	rc.Logger = hl
	conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: raft.ServerID(rec.Voter.ID), Address: raft.ServerAddress(rec.Voter.Address)}}}
	// RecoverCluster sends nothing: it only asks the transport to encode
	// the configuration's addresses into the snapshot's metadata, which
	// the in-memory transport does exactly as the network one does.
	_, trans := raft.NewInmemTransport(raft.ServerAddress(rec.Voter.Address))
	defer trans.Close()
	log.Info("recovering: applying every entry of the log into the state, then writing a snapshot with the new configuration", "last", before.Last, "last_term", before.LastTerm)
	// The stable store first: a node whose recovery stops half-way shows
	// the new lineage, and is refused by the old machines rather than
	// taken for one of them; running recover again finishes it.
	if err := writeStableLineage(logs, next); err != nil {
		return rec, fmt.Errorf("recover: lineage: %w", err)
	}
	err = raft.RecoverCluster(rc, releasing{state, next}, logs, logs, snaps, trans, conf)
	if derr := snaps.damaged(); derr != nil {
		// Raft falls back on an older snapshot when the newest does not
		// open; a damaged one is this node's disk rotting, not a choice.
		return rec, fmt.Errorf("recover: %w", derr)
	}
	if err != nil {
		return rec, fmt.Errorf("recover: %w", err)
	}
	if err := search.MarkForRebuild(filepath.Join(dataDir, "search")); err != nil {
		return rec, err
	}
	if rec.Entries, err = state.Count(); err != nil {
		return rec, err
	}
	rec.Index, rec.Term = before.Last, before.LastTerm
	return rec, nil
}

// releasing is the state machine as RecoverCluster needs it: raft
// persists the snapshot it takes but never releases it, and the state
// file cannot close while the snapshot's read transaction is open. Its
// snapshot, the one the recovered cluster starts from and sends to the
// nodes that join it, carries the new lineage: the state takes it once
// every entry of the log is applied, right before the snapshot.
type releasing struct {
	*fsm.FSM
	lineage [2]transport.Lineage
}

func (r releasing) Snapshot() (raft.FSMSnapshot, error) {
	if err := r.FSM.SetLineage(r.lineage[0], r.lineage[1]); err != nil {
		return nil, err
	}
	s, err := r.FSM.Snapshot()
	if err != nil {
		return nil, err
	}
	return releasedAfterPersist{s}, nil
}

type releasedAfterPersist struct{ raft.FSMSnapshot }

func (s releasedAfterPersist) Persist(sink raft.SnapshotSink) error {
	defer s.Release()
	return s.FSMSnapshot.Persist(sink)
}
