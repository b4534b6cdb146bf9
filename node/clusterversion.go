package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/cluster"
	"github.com/restarea/restarea/fsm"
)

// The cluster version (fsm/clusterversion.go) is raised only when an
// operator finalizes an upgrade, or by the leader itself with
// AutoFinalizeUpgrade, and only once every member of the configuration has
// said (PeerInfo.ClusterVersionMax) that it knows the target. The check and
// the proposals run under the format gate's lock, which joins take too, so
// no member the check did not ask can be admitted in between; afterwards a
// joiner that does not know the version is refused (admitJoin), and a node
// whose binary does not know the version of its own state file refuses to
// start (checkClusterVersion).

// ErrUnknownClusterVersion is returned by Start for a data directory whose
// cluster runs a cluster version this binary does not know.
var ErrUnknownClusterVersion = errors.New("unknown cluster version")

// checkClusterVersion refuses to start on a data directory whose state file
// records a cluster version above what this binary knows. It opens the
// state file read-only and runs before anything opens a file of the data
// directory for writing, so a refused start leaves the directory exactly as
// it was. A state file that cannot be read is left to fsm.Open, which sets
// a torn file aside.
func (n *Node) checkClusterVersion() error {
	path := filepath.Join(n.cfg.DataDir, "state.db")
	v, err := fsm.ReadClusterVersion(path)
	if err != nil {
		if !errors.Is(err, fsm.ErrNoStateFile) {
			n.log.Warn("could not read the cluster version of the state file before opening it", "path", path, "err", err)
		}
		return nil
	}
	if v > n.cfg.ClusterVersionMax {
		return fmt.Errorf("%w: this data directory's cluster runs cluster version %d; this binary (%s) knows up to %d: run a release that knows it",
			ErrUnknownClusterVersion, v, n.cfg.Version, n.cfg.ClusterVersionMax)
	}
	return nil
}

// onHalt stops the node when its state machine stopped applying the log
// (the log raised the cluster version past what this binary knows), or
// when damaged bytes were found on its disk (a *fsm.CorruptError, from the
// state machine or from the raft log's checks, logcheck.go): serving reads
// of a state that no longer follows the cluster would be wrong, and a
// restart on a release that knows the version resumes. It runs on raft's
// goroutines, so the stop runs on its own, once Start has returned (a
// failed Start has already closed what it opened). Only the first call
// counts: the same damage is often met by several checks.
func (n *Node) onHalt(err error) {
	if !n.haltErr.CompareAndSwap(nil, &err) {
		return
	}
	msg := "stopping: this node cannot apply the cluster's log"
	if c := (*fsm.CorruptError)(nil); errors.As(err, &c) {
		msg = "stopping: this node's data is damaged" // docs/disasters.md, "When a node's disk rots"
		n.met.corruption.WithLabelValues(corruptionKind(c.File)).Inc()
	}
	n.log.Error(msg, "err", err.Error(), "version", n.cfg.Version, "cluster_version_max", n.cfg.ClusterVersionMax)
	go func() {
		<-n.started
		if n.startOK {
			n.Close()
		}
	}()
}

// corruptionKind is the file label of restarea_corruption_detected_total
// for a damaged file: one series per kind, not per snapshot.
func corruptionKind(file string) string {
	if strings.HasPrefix(file, "snapshots/") {
		return "snapshot"
	}
	return file
}

// Halted returns why the node stopped by itself (its state machine met a
// cluster version it does not know), or nil.
func (n *Node) Halted() error {
	if p := n.haltErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Done is closed once the node has stopped, by Close, Kill or by itself
// (Halted), and closed its stores: its data directory is free.
func (n *Node) Done() <-chan struct{} { return n.done }

// peerVersion is what a member said about its release, as last asked.
type peerVersion struct {
	version string // "" when it does not say (v0.1.0)
	max     int    // PeerInfo.MaxClusterVersion: at least 1
}

// peerVersions remembers what members said about their releases, for the
// cluster status; one refresh at a time asks them all.
type peerVersions struct {
	mu        sync.Mutex
	known     map[string]peerVersion
	inflight  chan struct{}
	refreshed time.Time // when the last round ended
}

// peerVersionsFresh is how long a round's answers serve the statuses
// that follow it without asking again: polls of the status (tests,
// tools) would otherwise ask every member each time.
const peerVersionsFresh = time.Second

// closed is a channel that is always ready.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (p *peerVersions) record(id string, info cluster.PeerInfo) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.known == nil {
		p.known = map[string]peerVersion{}
	}
	p.known[id] = peerVersion{version: info.Version, max: info.MaxClusterVersion()}
}

func (p *peerVersions) get(id string) (peerVersion, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.known[id]
	return v, ok
}

// statusPeerWait bounds how long a cluster status waits for the members'
// answers: a member that is down or slow is shown with what it said last.
const statusPeerWait = 500 * time.Millisecond

// refreshPeerVersions asks every other member what it runs, at most one
// round at a time, and returns a channel closed when the round ends.
func (n *Node) refreshPeerVersions(servers []raft.Server) <-chan struct{} {
	p := &n.versions
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight != nil {
		return p.inflight
	}
	if time.Since(p.refreshed) < peerVersionsFresh {
		return closed
	}
	done := make(chan struct{})
	p.inflight = done
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for _, s := range servers {
			if string(s.ID) == n.id {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if info, err := n.peers.PeerAt(ctx, string(s.Address)); err == nil {
					p.record(string(s.ID), info)
				}
			}()
		}
		wg.Wait()
		p.mu.Lock()
		p.inflight, p.refreshed = nil, time.Now()
		p.mu.Unlock()
		close(done)
	}()
	return done
}

// memberVersions fills each member's release and cluster version max:
// this node's own, and what the others said (asked now, waiting at most
// statusPeerWait; "" and 0 for a member never heard from).
func (n *Node) memberVersions(ctx context.Context, members []restarea.Member) {
	f := n.raft.GetConfiguration()
	if f.Error() == nil {
		select {
		case <-n.refreshPeerVersions(f.Configuration().Servers):
		case <-time.After(statusPeerWait):
		case <-ctx.Done():
		}
	}
	for i := range members {
		m := &members[i]
		if m.ID == n.id {
			m.Version, m.ClusterVersionMax = n.cfg.Version, n.cfg.ClusterVersionMax
			continue
		}
		if v, ok := n.versions.get(m.ID); ok {
			m.Version, m.ClusterVersionMax = v.version, v.max
		}
	}
}

// FinalizeUpgrade raises the cluster version, through the leader, to the
// newest version every member knows, and answers with the cluster status
// as this node sees it afterwards.
func (n *Node) FinalizeUpgrade(ctx context.Context) (restarea.UpgradeResult, error) {
	ctx = n.originContext(ctx)
	var ans cluster.FinalizeAnswer
	err := n.onLeader(ctx, func(ctx context.Context) error {
		var err error
		ans, err = n.FinalizeLeader(ctx)
		return err
	}, func(ctx context.Context, addr string) error {
		var err error
		ans, err = n.peers.FinalizeLeader(ctx, addr)
		return err
	})
	if err != nil {
		return restarea.UpgradeResult{}, err
	}
	if ans.Index > 0 {
		n.acknowledged(ans.Index)
		if err := n.waitApplied(ctx, ans.Index); err != nil {
			return restarea.UpgradeResult{}, err
		}
	}
	st, err := n.ClusterStatus(ctx)
	if err != nil {
		return restarea.UpgradeResult{}, err
	}
	return restarea.UpgradeResult{Changed: ans.To > ans.From, From: ans.From, To: ans.To, Message: ans.Message, Status: st}, nil
}

// FinalizeLeader is FinalizeUpgrade on the leader: it asks every member
// of the configuration which cluster versions it knows and, if all know
// the next one, raises the version one step per command up to the newest
// all know. A member that does not answer, or that does not know the next
// version while another member does, makes it a refusal naming the member;
// a cluster already at the newest version all know is left as it is.
func (n *Node) FinalizeLeader(ctx context.Context) (cluster.FinalizeAnswer, error) {
	return n.finalizeLeader(ctx, 0, false)
}

// finalizeLeader is FinalizeLeader raising the version to at most limit
// (0: no limit); forming says a new cluster is being formed
// (formation.go), which only changes what is logged.
func (n *Node) finalizeLeader(ctx context.Context, limit int, forming bool) (cluster.FinalizeAnswer, error) {
	if !n.IsLeader() {
		return cluster.FinalizeAnswer{}, cluster.ErrNotLeader
	}
	// A cluster finalized on a binary that also reads a newer log format
	// switches that on first, as the leader's timer would.
	n.maybeEnableLogV2(ctx)
	n.format.mu.Lock()
	defer n.format.mu.Unlock()
	cur := n.fsm.ClusterVersion()
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return cluster.FinalizeAnswer{}, unavailable("raft configuration unavailable: %v", err)
	}
	type member struct {
		id      string
		version string
		max     int
	}
	members := []member{{n.id, n.cfg.Version, n.cfg.ClusterVersionMax}}
	var unreachable []string
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == n.id {
			continue
		}
		info, err := n.peers.PeerAt(ctx, string(s.Address))
		if err != nil {
			unreachable = append(unreachable, fmt.Sprintf("%s (%s): %v", s.ID, s.Address, err))
			continue
		}
		n.versions.record(string(s.ID), info)
		members = append(members, member{string(s.ID), info.Version, info.MaxClusterVersion()})
	}
	if len(unreachable) > 0 {
		return cluster.FinalizeAnswer{}, unavailable("cannot finalize the upgrade: every member must say which cluster versions it knows, and %s did not answer; retry once it does",
			strings.Join(unreachable, "; "))
	}
	target, newest := members[0].max, members[0].max
	for _, m := range members {
		target, newest = min(target, m.max), max(newest, m.max)
	}
	if limit > 0 {
		target, newest = min(target, limit), min(newest, limit)
	}
	if target <= cur {
		if newest <= cur {
			return cluster.FinalizeAnswer{From: cur, To: cur,
				Message: fmt.Sprintf("the cluster already runs cluster version %d, the newest every member knows: nothing to finalize", cur)}, nil
		}
		var behind []string
		for _, m := range members {
			if m.max <= cur {
				behind = append(behind, describeBehind(m.id, m.version, m.max))
			}
		}
		slices.Sort(behind)
		return cluster.FinalizeAnswer{}, restarea.Errorf(restarea.CodeConflict,
			"cannot finalize the upgrade from cluster version %d: %s", cur, strings.Join(behind, "; "))
	}
	ans := cluster.FinalizeAnswer{From: cur, To: cur}
	for v := cur + 1; v <= target; v++ {
		res, err := n.propose(ctx, n.withOrigin(ctx, &fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: v}))
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			n.log.Log(context.Background(), n.faultLevel(), "could not raise the cluster version", "to", v, "err", err)
			if ans.To > ans.From {
				break // report the steps taken
			}
			return ans, err
		}
		ans.To, ans.Index = v, res.Index
		if forming {
			n.log.Info("the new cluster runs a newer cluster version; nodes of older releases are refused", "cluster_version", v)
		} else {
			n.logAction(ctx, restarea.AuditClusterVersion, strconv.Itoa(v), res)
			n.log.Info("the upgrade is finalized: the cluster runs a new cluster version; nodes of older releases are refused from now on",
				"cluster_version", v)
		}
	}
	n.kickBackfill() // from cluster version 4, older entries are indexed by their body
	ans.Message = fmt.Sprintf("the cluster runs cluster version %d (it ran %d): the upgrade is finalized, and nodes of releases that do not know cluster version %d can no longer start on this cluster's data or join it",
		ans.To, ans.From, ans.To)
	return ans, nil
}

// describeBehind names a member that must be upgraded before finalizing.
func describeBehind(id, version string, max int) string {
	if version == "" {
		return fmt.Sprintf("%s runs a release that does not report its version (v0.1.0 or earlier; cluster version ≤ %d): upgrade it first", id, max)
	}
	return fmt.Sprintf("%s runs %s (cluster version ≤ %d): upgrade it first", id, version, max)
}

// maybeAutoFinalize finalizes the upgrade on the leader's timer when
// AutoFinalizeUpgrade is on and every member knows a newer cluster
// version; a member that is behind or does not answer keeps it for a
// later tick, quietly.
func (n *Node) maybeAutoFinalize() {
	if !n.cfg.AutoFinalizeUpgrade || !n.IsLeader() || n.fsm.ClusterVersion() >= n.cfg.ClusterVersionMax {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ApplyTimeout)
	defer cancel()
	ans, err := n.FinalizeLeader(ctx)
	if err != nil {
		n.log.Debug("automatic finalize-upgrade waits", "err", err)
		return
	}
	if ans.To > ans.From {
		n.log.Info("finalized the upgrade by itself (--auto-finalize-upgrade)", "from", ans.From, "to", ans.To)
	}
}
