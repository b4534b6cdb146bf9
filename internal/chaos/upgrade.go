package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
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
	Role    string `json:"role,omitempty"`
	Binary  string `json:"binary,omitempty"`
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

// finalize calls the finalize route and waits until every node shows a
// cluster_version above the one it showed before.
func (up *upgrader) finalize(ctx context.Context) error {
	r := up.r
	before := clusterVersions(ctx, up.hc, up.urls, up.token)
	st := UpgradeStep{Step: StepFinalize, Node: -1, StartNs: r.hist.Now()}
	r.log.Info("upgrade step", "step", StepFinalize, "cluster_version_before", before)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), up.pace.finalize)
	version, err := callFinalize(fctx, up.hc, up.urls, up.token)
	cancel()
	var after []string
	if err == nil {
		st.Version = version
		vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), up.pace.versions)
		after, err = waitVersionsRose(vctx, up.hc, up.urls, up.token, before)
		cancel()
	}
	st.EndNs = r.hist.Now()
	st.ReadyMs = msBetween(st.StartNs, st.EndNs)
	if err != nil {
		st.Error = err.Error()
	} else {
		r.log.Info("upgrade step done", "step", StepFinalize, "cluster_version", version, "cluster_version_after", after,
			"after", time.Duration(st.EndNs-st.StartNs).Round(time.Millisecond))
	}
	up.mu.Lock()
	up.rep.Steps = append(up.rep.Steps, st)
	up.rep.ClusterVersionBefore, up.rep.ClusterVersionAfter = before, after
	up.mu.Unlock()
	return err
}

// callFinalize asks the nodes in turn to finalize the upgrade until one
// answers 200, and returns the cluster_version of its answer. 404 means
// the binary has no such route; 409 (members behind) and 503 are retried
// until ctx ends, then reported with the last answer.
func callFinalize(ctx context.Context, hc *http.Client, urls []string, token string) (string, error) {
	last := errors.New("not asked")
	for try := 0; try < maxPolls; try++ {
		u := urls[try%len(urls)] + FinalizePath
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		status, env, err := restDo(cctx, hc, http.MethodPost, u, token, nil)
		cancel()
		switch {
		case err != nil:
			last = err
		case status == http.StatusOK:
			var st struct {
				ClusterVersion json.RawMessage `json:"cluster_version"`
			}
			if err := json.Unmarshal(env.Data, &st); err != nil || len(st.ClusterVersion) == 0 {
				return "", fmt.Errorf("finalize: POST %s answered 200 without cluster_version: %.300s", u, env.Data)
			}
			return versionText(st.ClusterVersion), nil
		case status == http.StatusNotFound:
			return "", fmt.Errorf("finalize: route not available (POST %s answered 404 %s)", u, describe(env))
		case status == http.StatusConflict:
			last = fmt.Errorf("finalize: refused, members behind: %s", describe(env))
		case status == http.StatusServiceUnavailable:
			last = fmt.Errorf("finalize: POST %s answered 503 %s", u, describe(env))
		default:
			return "", fmt.Errorf("finalize: POST %s answered %d %s", u, status, describe(env))
		}
		if !sleep(ctx, 500*time.Millisecond) {
			break
		}
	}
	return "", last
}

// clusterVersions reads cluster_version from every node's GET
// /api/v1/cluster ("" where a node does not answer or has none).
func clusterVersions(ctx context.Context, hc *http.Client, urls []string, token string) []string {
	out := make([]string, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			var st struct {
				ClusterVersion json.RawMessage `json:"cluster_version"`
			}
			if getData(cctx, hc, u+"/api/v1/cluster", token, &st) == nil {
				out[i] = versionText(st.ClusterVersion)
			}
		}()
	}
	wg.Wait()
	return out
}

// waitVersionsRose polls every node until its cluster_version is above
// before's, and returns the versions last seen.
func waitVersionsRose(ctx context.Context, hc *http.Client, urls []string, token string, before []string) ([]string, error) {
	var now []string
	for range maxPolls {
		now = clusterVersions(ctx, hc, urls, token)
		var behind []string
		for i := range urls {
			if !versionRose(before[i], now[i]) {
				behind = append(behind, fmt.Sprintf("node %d: %q → %q", i, before[i], now[i]))
			}
		}
		if len(behind) == 0 {
			return now, nil
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return now, fmt.Errorf("finalize: cluster_version did not rise on every node: %s", strings.Join(behind, ", "))
		}
	}
	return now, errors.New("finalize: cluster_version polls exhausted")
}

// versionText is a JSON version as text: a string's contents, a number's
// digits, "" for none or null.
func versionText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if t := strings.TrimSpace(string(raw)); t != "null" {
		return t
	}
	return ""
}

// versionRose reports whether version after is above before: numbers
// compare as numbers, dotted versions ("1.2", "v0.2.0") part by part; no
// version before and one after counts as a rise.
func versionRose(before, after string) bool {
	if after == "" {
		return false
	}
	if before == "" {
		return true
	}
	b := strings.Split(strings.TrimPrefix(before, "v"), ".")
	a := strings.Split(strings.TrimPrefix(after, "v"), ".")
	for k := range max(len(a), len(b)) {
		x, y := part(b, k), part(a, k)
		if x < 0 || y < 0 {
			return false // not a version this check can compare
		}
		if y != x {
			return y > x
		}
	}
	return false
}

// part returns the k-th numeric part of a version, 0 past its end, -1
// when it is not a number.
func part(parts []string, k int) int64 {
	if k >= len(parts) {
		return 0
	}
	n, err := strconv.ParseInt(parts[k], 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

func msBetween(from, to int64) float64 { return float64(time.Duration(to-from).Microseconds()) / 1000 }

// report completes the upgrade's report from the history: each step's
// write gap, the acknowledged posts of the last round; and returns the
// violations: the upgrade's error, no write after it, a node not ready at
// the end.
func (up *upgrader) report(ctx context.Context, ops []Op) (*UpgradeReport, []Violation) {
	up.mu.Lock()
	rep := up.rep
	rep.Steps = append([]UpgradeStep(nil), up.rep.Steps...)
	err := up.err
	up.mu.Unlock()
	rep.EarlierReplays = up.w.earlierReplays.Load()
	for k := range rep.Steps {
		s := &rep.Steps[k]
		s.WriteGapMs = float64(gapWithin(ops, s.StartNs, s.EndNs+int64(up.pace.gap)).Microseconds()) / 1000
	}
	var vs []Violation
	if err != nil {
		vs = append(vs, violation(VUpgradeFailed, "", -1, "%v", err))
	}
	if rep.FinalRoundNs > 0 {
		for _, op := range ops {
			if op.Kind == OpPost && op.CallNs >= rep.FinalRoundNs && (op.Outcome == OutcomeCreated || op.Outcome == OutcomeReplayed) {
				rep.FinalRoundAcknowledged++
			}
		}
		if rep.FinalRoundAcknowledged == 0 {
			vs = append(vs, violation(VUpgradeFailed, "", -1, "no post was acknowledged in the last round, after the upgrade"))
		}
	}
	for i, u := range up.urls {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := waitReady(rctx, up.hc, u); err != nil {
			vs = append(vs, violation(VUpgradeFailed, "", i, "not ready after the upgrade: %v", err))
		}
		cancel()
	}
	rep.Completed = err == nil
	return &rep, vs
}

// gapWithin is the longest time between from and to in which no post
// succeeded, as writeGap measures it over the whole run.
func gapWithin(ops []Op, from, to int64) time.Duration {
	if to <= from {
		return 0
	}
	prev := from
	var gap time.Duration
	var ok []int64
	for _, op := range ops {
		if op.Kind == OpPost && (op.Outcome == OutcomeCreated || op.Outcome == OutcomeReplayed) && op.ReturnNs > from && op.ReturnNs < to {
			ok = append(ok, op.ReturnNs)
		}
	}
	slices.Sort(ok)
	for _, t := range append(ok, to) {
		gap = max(gap, time.Duration(t-prev))
		prev = t
	}
	return gap
}

// print writes the upgrade's lines of the report's table.
func (u *UpgradeReport) print(tw *tabwriter.Writer) {
	fmt.Fprintf(tw, "upgrade\tfrom %s to %s, completed %v\n", u.FromVersion, u.ToVersion, u.Completed)
	shown := func(vs []string) string {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = cmp.Or(v, "-")
		}
		return cmp.Or(strings.Join(out, ","), "-")
	}
	for _, s := range u.Steps {
		what := fmt.Sprintf("node %d (%s) → %s", s.Node, s.Role, s.Version)
		if s.Step == StepFinalize {
			what = fmt.Sprintf("cluster_version %s → %s", shown(u.ClusterVersionBefore), shown(u.ClusterVersionAfter))
		}
		line := fmt.Sprintf("  %s\t%s: %.0fms, write gap %.0fms", s.Step, what, s.ReadyMs, s.WriteGapMs)
		if s.Error != "" {
			line += ", error: " + s.Error
		}
		fmt.Fprintln(tw, line)
	}
	fmt.Fprintf(tw, "  last round\t%d posts acknowledged, %d replays of earlier request_ids\n", u.FinalRoundAcknowledged, u.EarlierReplays)
}
