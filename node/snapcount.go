package node

import (
	"io"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// countingSnapshots wraps the snapshot store to count snapshots written
// and failed, raft's own and those a leader installs on this node: raft
// logs a failed snapshot but has no metric for it, and a node that cannot
// snapshot grows its log without bound.
type countingSnapshots struct {
	raft.SnapshotStore
	total *prometheus.CounterVec
}

// countSnapshots returns store with every snapshot counted in total by
// outcome ("persisted" or "failed").
func countSnapshots(store raft.SnapshotStore, total *prometheus.CounterVec) raft.SnapshotStore {
	total.WithLabelValues("persisted")
	total.WithLabelValues("failed")
	return &countingSnapshots{SnapshotStore: store, total: total}
}

// Create implements raft.SnapshotStore.
func (s *countingSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		s.total.WithLabelValues("failed").Inc()
		return nil, err
	}
	return &countingSink{SnapshotSink: sink, total: s.total}, nil
}

// countingSink counts its snapshot once: failed when it is cancelled (raft
// and the state machine cancel a snapshot whose writing failed) or its
// close fails, persisted when it closes.
type countingSink struct {
	raft.SnapshotSink
	total   *prometheus.CounterVec
	counted bool
}

var _ io.WriteCloser = (*countingSink)(nil)

func (s *countingSink) count(outcome string) {
	if !s.counted {
		s.counted = true
		s.total.WithLabelValues(outcome).Inc()
	}
}

// Close implements raft.SnapshotSink.
func (s *countingSink) Close() error {
	err := s.SnapshotSink.Close()
	if err != nil {
		s.count("failed")
	} else {
		s.count("persisted")
	}
	return err
}

// Cancel implements raft.SnapshotSink.
func (s *countingSink) Cancel() error {
	s.count("failed")
	return s.SnapshotSink.Cancel()
}
