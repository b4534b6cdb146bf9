package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Upgrade describes a rolling upgrade (Config.Upgrade): the nodes run
// From when the run starts and are replaced one at a time by To.
type Upgrade struct {
	// From and To are the paths of the previous and the current binary.
	From, To string
	// Finalize calls POST /api/v1/admin/cluster/finalize-upgrade once
	// every node runs To, and checks that cluster_version rose on every
	// node.
	Finalize bool
	// DowngradeOne takes one upgraded node back to From and up to To
	// again, under load, before the finalize step.
	DowngradeOne bool
}

// Upgrader is a driver whose nodes can change binary: a GracefulRestarter
// whose restart may start another executable.
type Upgrader interface {
	// Replace stops node i gracefully (SIGTERM, wait for the exit) and
	// starts binary on the same data directory with the same identity
	// and addresses; it returns the binary's version line once the
	// process started (the caller waits for its /readyz).
	Replace(ctx context.Context, i int, binary string) (version string, err error)
	// Version returns binary's version line.
	Version(binary string) (string, error)
}

// Steps of a rolling upgrade, in the report and the fault records (with
// the node's role appended there: "upgrade-leader").
const (
	StepUpgrade   = "upgrade"
	StepDowngrade = "downgrade"
	StepReupgrade = "reupgrade"
	StepFinalize  = "finalize"
)

// upgradePace is the pacing of a rolling upgrade.
type upgradePace struct {
	// warmup passes before the first node is replaced, so the old
	// binaries serve the workload first and store what the last round
	// replays.
	warmup time.Duration
	// gap separates one node's readiness from the next step.
	gap time.Duration
	// final is the least time the workload runs after the last step.
	final time.Duration
	// finalize bounds the finalize call, retried while the cluster
	// answers 503 or 409 (a member not yet heard at its new version).
	finalize time.Duration
	// versions bounds the wait for every node to show the raised
	// cluster_version.
	versions time.Duration
}

var defaultPace = upgradePace{warmup: 2 * time.Second, gap: rollingGap, final: 5 * time.Second,
	finalize: 20 * time.Second, versions: 30 * time.Second}

// FinalizePath is the admin route that raises the cluster's version once
// every member runs the new binary: 200 with the cluster status, 409
// naming the members that are behind.
const FinalizePath = "/api/v1/admin/cluster/finalize-upgrade"

// VUpgradeFailed says the rolling upgrade did not complete: a node was
// not replaced, the finalize step failed, cluster_version did not rise
// on every node, no post was acknowledged after the finalize step, or a
// node was not ready at the end.
const VUpgradeFailed = "upgrade_failed"

// UpgradeStep is one step of a rolling upgrade: a node replaced by a
// binary (or the finalize call, Node -1), when, and how it went.
type UpgradeStep struct {
	Step string `json:"step"`
	Node int    `json:"node"`
	// Role is the node's role when the step began: leader or follower.
	Role   string `json:"role,omitempty"`
	Binary string `json:"binary,omitempty"`
	// Version is the binary's version line; for the finalize step, the
	// cluster_version the finalize call answered.
	Version string `json:"version,omitempty"`
	StartNs int64  `json:"start_ns"`
	EndNs   int64  `json:"end_ns"`
	// ReadyMs is how long the step took: from SIGTERM to the new
	// process's /readyz, or the finalize call and the versions' rise.
	ReadyMs float64 `json:"ready_ms"`
	// WriteGapMs is the longest time without a successful post from the
	// step's start to a second after its end.
	WriteGapMs float64 `json:"write_gap_ms"`
	Error      string  `json:"error,omitempty"`
}

// UpgradeReport is the rolling upgrade's part of the report.
type UpgradeReport struct {
	From        string        `json:"from"`
	FromVersion string        `json:"from_version"`
	To          string        `json:"to"`
	ToVersion   string        `json:"to_version"`
	Steps       []UpgradeStep `json:"steps"`
	// ClusterVersionBefore and After are each node's cluster_version
	// before and after the finalize step ("" where absent).
	ClusterVersionBefore []string `json:"cluster_version_before,omitempty"`
	ClusterVersionAfter  []string `json:"cluster_version_after,omitempty"`
	// FinalRoundNs is when the last round of workload began; the counts
	// are of the calls after it.
	FinalRoundNs           int64 `json:"final_round_ns"`
	FinalRoundAcknowledged int   `json:"final_round_acknowledged"`
	EarlierReplays         int64 `json:"earlier_replays"`
	// Completed says every planned step ran without an error.
	Completed bool `json:"completed"`
}

// upgrader carries out a rolling upgrade against the nodes of a run.
type upgrader struct {
	r     *faultRunner
	u     Upgrader
	hc    *http.Client
	urls  []string
	token string
	plan  Upgrade
	w     *workload
	pace  upgradePace

	mu  sync.Mutex
	rep UpgradeReport
	err error
}

// run replaces every node in index order, takes one back and up again
// with DowngradeOne, finalizes with Finalize, then lets the workload go
// on for the last round (at least finalRound, and until duration has
// passed) with replays of earlier posts. A step that fails ends the
// upgrade: replacing another node could take the quorum away.
func (up *upgrader) run(ctx context.Context, duration time.Duration) {
	if !sleep(ctx, up.pace.warmup) {
		up.fail(errors.New("the run ended before the upgrade began"))
		return
	}
	type plannedStep struct {
		step, binary string
		node         int
	}
	var steps []plannedStep
	for i := range up.urls {
		steps = append(steps, plannedStep{StepUpgrade, up.plan.To, i})
	}
	if up.plan.DowngradeOne {
		// The first node upgraded runs the new binary longest: taking it
		// back exercises the old binary reading what new nodes wrote.
		steps = append(steps, plannedStep{StepDowngrade, up.plan.From, 0}, plannedStep{StepReupgrade, up.plan.To, 0})
	}
	for _, s := range steps {
		if ctx.Err() != nil {
			up.fail(fmt.Errorf("the run ended before the %s of node %d", s.step, s.node))
			return
		}
		if err := up.replace(ctx, s.step, s.node, s.binary); err != nil {
			up.fail(err)
			return
		}
		if !sleep(ctx, up.pace.gap) {
			up.fail(errors.New("the run ended during the upgrade"))
			return
		}
	}
	if up.plan.Finalize {
		if err := up.finalize(ctx); err != nil {
			up.fail(err)
			// The last round still runs: writes to the upgraded cluster are
			// checked whatever the finalize step answered.
		}
	}
	start := up.r.hist.Now()
	up.mu.Lock()
	up.rep.FinalRoundNs = start
	up.mu.Unlock()
	up.w.replayEarlier.Store(true)
	up.r.log.Info("upgrade: last round of workload", "replaying", "earlier request_ids")
	rest := max(up.pace.final, duration-time.Duration(start))
	sleep(ctx, rest)
}

// versions asks both binaries for their version lines, before anything
// is replaced.
func (up *upgrader) versions() error {
	from, err := up.u.Version(up.plan.From)
	if err != nil {
		return fmt.Errorf("chaos: the binary to upgrade from: %w", err)
	}
	to, err := up.u.Version(up.plan.To)
	if err != nil {
		return fmt.Errorf("chaos: the binary to upgrade to: %w", err)
	}
	up.rep.From, up.rep.FromVersion, up.rep.To, up.rep.ToVersion = up.plan.From, from, up.plan.To, to
	return nil
}

func (up *upgrader) fail(err error) {
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.err == nil {
		up.err = err
	}
	up.r.log.Warn("upgrade", "err", err)
}

// replace runs one step on node i: SIGTERM, binary started on its data,
// /readyz awaited. The step is recorded as a fault too, so the check of
// a rolling restart (connection errors only on the node being replaced)
// applies.
func (up *upgrader) replace(ctx context.Context, step string, i int, binary string) error {
	r := up.r
	r.mon.observe(ctx)
	role := "follower"
	if r.mon.leaderIndex() == i {
		role = "leader"
	}
	st := UpgradeStep{Step: step, Node: i, Role: role, Binary: binary, StartNs: r.hist.Now()}
	rec := FaultRecord{Kind: step + "-" + role, Nodes: []int{i}, StartNs: st.StartNs}
	r.log.Info("upgrade step", "step", step, "node", i, "role", role, "binary", binary)
	// The step and the wait happen even when ctx ends meanwhile: a node
	// left down would fail the check for the wrong reason.
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout+readyTimeout)
	defer cancel()
	version, err := up.u.Replace(uctx, i, binary)
	st.Version = version
	if err == nil {
		err = waitReady(uctx, up.hc, up.urls[i])
	}
	st.EndNs = r.hist.Now()
	rec.EndNs = st.EndNs
	st.ReadyMs = msBetween(st.StartNs, st.EndNs)
	if err != nil {
		st.Error = err.Error()
		rec.Error = fmt.Sprintf("%s of node %d to %s: %v", step, i, version, err)
		r.log.Warn("upgrade step", "step", step, "node", i, "err", err)
	} else {
		r.log.Info("upgrade step done", "step", step, "node", i, "version", version, "ready_after", time.Duration(st.EndNs-st.StartNs).Round(time.Millisecond))
	}
	r.mu.Lock()
	r.records = append(r.records, rec)
	r.mu.Unlock()
	up.mu.Lock()
	up.rep.Steps = append(up.rep.Steps, st)
	up.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s of node %d: %w", step, i, err)
	}
	return nil
}

func msBetween(from, to int64) float64 { return float64(time.Duration(to-from).Microseconds()) / 1000 }
