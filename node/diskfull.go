package node

import (
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/cluster"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/diskwatch"
)

// A node whose data directory cannot be written (a full disk, most often)
// must neither crash nor go on as if nothing happened:
//
//   - the state file retries the batch it cannot commit (fsm/diskfull.go);
//   - a failed append to the raft log is raft's own business: a leader
//     steps down, a follower rejects the append and the leader resends it;
//   - a failed write of raft's term or vote would make raft panic, so the
//     stable store retries it instead (internal/diskwatch), blocking raft on
//     this node, which is what a node that cannot record its vote must do;
//   - meanwhile the node refuses writes with 503 unavailable (nothing is
//     proposed, so nothing can be half-done), says why on /readyz and in
//     restarea_data_dir_unwritable, a leader hands leadership over, and a
//     follower stops campaigning early (reluctant): a full node's log is
//     as long as anyone's right after it stepped down, so it would win
//     election after election and step down again on its first append;
//   - reads go on from the state applied so far, and everything resumes by
//     itself once a write succeeds again.

// diskTrouble returns why this node cannot write its data directory, or
// nil.
func (n *Node) diskTrouble() error {
	what := ""
	var err error
	if s := n.fsm.Stalled(); s != nil {
		what, err = fmt.Sprintf("the state file cannot be committed since %s", s.Since.UTC().Format(time.RFC3339)), s.Err
	} else if f := n.disk.Failed(); f != nil {
		what, err = fmt.Sprintf("the raft %s store failed a write at %s", f.Store, f.At.UTC().Format(time.RFC3339)), f.Err
	} else {
		return nil
	}
	if fsm.IsDiskFull(err) {
		return fmt.Errorf("disk full: %s (%v)", what, err)
	}
	return fmt.Errorf("data directory not writable: %s (%v)", what, err)
}

// refuseWrites is the answer to a write while diskTrouble is not nil:
// nothing was proposed, so the post was not stored.
func (n *Node) refuseWrites() error {
	err := n.diskTrouble()
	if err == nil {
		return nil
	}
	return restarea.Errorf(restarea.CodeUnavailable,
		"this node cannot store writes (%v); nothing was stored — retry with the same request_id, here once space is freed or on another node", err).
		WithRetryAfter(5 * time.Second)
}

// openDiskWatch registers the metrics of the data directory's writes.
func (n *Node) openDiskWatch() {
	n.disk = diskwatch.New(n.cfg.DataDir)
	n.diskHandovers = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "restarea_disk_leadership_handovers_total",
		Help: "Leadership transfers this node started because it could not write its data directory.",
	})
	failures := func(store string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "restarea_data_dir_write_failures_total",
			Help:        "Failed writes to the data directory, by store (state: a state-file commit, retried; log: a raft log append or compaction; stable: raft's term or vote, retried).",
			ConstLabels: prometheus.Labels{"store": store},
		}, f)
	}
	n.reg.MustRegister(n.diskHandovers,
		failures(diskwatch.StoreState, func() float64 { return float64(n.fsm.FailedCommits()) }),
		failures(diskwatch.StoreLog, func() float64 { return float64(n.disk.LogFailures()) }),
		failures(diskwatch.StoreStable, func() float64 { return float64(n.disk.StableFailures()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "restarea_data_dir_unwritable",
			Help: "1 while this node cannot write its data directory (a full disk): it refuses writes with 503 and is not ready.",
		}, func() float64 {
			if n.diskTrouble() != nil {
				return 1
			}
			return 0
		}),
	)
}

// watchDisk logs when the node starts and stops refusing writes, makes a
// leader that cannot write hand leadership over (raft steps a leader down
// by itself only when its log append fails, not when its state file does,
// and a leader that cannot apply stalls every write of the cluster), and
// makes a follower that cannot write reluctant to campaign.
func (n *Node) watchDisk(every time.Duration) {
	defer n.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	var troubled error
	var lastHandover time.Time
	reluctant := false
	handing := make(chan struct{}, 1)
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		case <-n.disk.Wake():
		}
		n.disk.SpaceReturned()
		err := n.diskTrouble()
		switch {
		case err != nil && troubled == nil:
			n.log.Error("refusing writes: this node cannot write its data directory", "reason", err.Error())
		case err == nil && troubled != nil:
			n.log.Info("the data directory is writable again: writes accepted", "was", troubled.Error())
		}
		troubled = err
		leader := n.IsLeader()
		if want := err != nil && !leader; want != reluctant && n.setReluctant(want) {
			reluctant = want
		}
		if err == nil || !leader || time.Since(lastHandover) < 2*n.cfg.ElectionTimeout || cluster.Voters(n.raft) < 2 {
			continue
		}
		select {
		case handing <- struct{}{}:
		default:
			continue // a transfer is still under way
		}
		lastHandover = time.Now()
		n.diskHandovers.Inc()
		go func() {
			defer func() { <-handing }()
			if err := n.raft.LeadershipTransfer().Error(); err != nil {
				n.log.Warn("leadership hand-over (data directory not writable) failed", "err", err)
				return
			}
			n.log.Warn("handed leadership over: this node cannot write its data directory", "reason", n.diskTrouble())
		}()
	}
}

// reluctance multiplies a reluctant follower's heartbeat and election
// timeouts: the healthy nodes elect a leader among themselves first, and
// when every node is in trouble the cluster still elects one, later.
const reluctance = 10

// setReluctant raises (or restores) this node's heartbeat and election
// timeouts, so that a follower that cannot write waits long before it
// campaigns. It reports whether raft took the change.
func (n *Node) setReluctant(on bool) bool {
	n.raftConfMu.Lock()
	defer n.raftConfMu.Unlock()
	rc := n.raft.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = n.cfg.HeartbeatTimeout, n.cfg.ElectionTimeout
	if on {
		rc.HeartbeatTimeout *= reluctance
		rc.ElectionTimeout *= reluctance
	}
	if err := n.raft.ReloadConfig(rc); err != nil {
		n.log.Warn("election timeouts not changed", "reluctant", on, "err", err)
		return false
	}
	n.log.Info("election timeouts changed: a node that cannot write its data directory waits before campaigning",
		"reluctant", on, "heartbeat_timeout", rc.HeartbeatTimeout.String(), "election_timeout", rc.ElectionTimeout.String())
	return true
}

// DiskHooks make the data directory's disk slow in tests. Production
// nodes have none: each hook is a nil check where it would run.
type DiskHooks struct {
	// WrapLogStore wraps raft's log store (under the log cache), e.g. to
	// delay every append.
	WrapLogStore func(raft.LogStore) raft.LogStore
	// BeforeCommit runs before every state-file transaction of a batch of
	// size entries.
	BeforeCommit func(size int)
}

func (h *DiskHooks) wrapLogStore(s raft.LogStore) raft.LogStore {
	if h == nil || h.WrapLogStore == nil {
		return s
	}
	return h.WrapLogStore(s)
}

func (h *DiskHooks) beforeCommit() func(int) {
	if h == nil {
		return nil
	}
	return h.BeforeCommit
}
