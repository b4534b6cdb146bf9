package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/restarea/restarea"
)

// Config describes a run. Zero values take the defaults of Defaults.
type Config struct {
	// Workers post concurrently; each new post goes to Fanout nodes at
	// most (two at least, when there are two nodes).
	Workers int
	Fanout  int
	// Duration bounds the workload; MaxOps bounds its calls (0: no bound
	// but Duration).
	Duration time.Duration
	MaxOps   int
	// Seed makes the fault schedule (and the workers' choices) repeatable.
	Seed int64
	// NoFaults runs the workload without faults even when the target has
	// a driver.
	NoFaults bool
	// RollingRestart replaces the random faults by rolling restarts: every
	// node in turn is restarted gracefully (SIGTERM, start on the same
	// data) and its /readyz awaited before the next, in rounds until
	// Duration has passed (at least one round, which the workload outlasts
	// whatever Duration says). The check adds that calls saw only
	// answers, 503s and timeouts. The target's driver must be a
	// GracefulRestarter.
	RollingRestart bool
	// Upgrade, when set, replaces the random faults by a rolling upgrade:
	// the nodes, started with Upgrade.From, are replaced one at a time by
	// Upgrade.To (graceful stop, start on the same data, /readyz awaited),
	// optionally one is taken back and up again and the upgrade
	// finalized, then the workload runs one more round, replaying earlier
	// request_ids. The checks of RollingRestart apply, and the upgrade
	// must complete. The target's driver must be an Upgrader.
	Upgrade *Upgrade
	// Faults are the fault classes of the schedule (ClassKill,
	// ClassPause, ClassPartition, ClassMembership, and any other the
	// driver names); nil takes every class the driver supports but
	// ClassMembership, which changes the cluster's members and is asked
	// for by name. A class the driver does not support is an error.
	Faults []string
	// MinOps and MinFaults extend a run past Duration: the workload goes
	// on until it has made MinOps calls and MinFaults faults have been
	// injected, but never past MaxDuration (which must then exceed
	// Duration; the fault schedule covers it). For soak runs.
	MinOps      int
	MinFaults   int
	MaxDuration time.Duration
	// FaultEvery is the cycle of the schedule: one fault per cycle (0:
	// an eighth of Duration, between 1s and 10s; see ScheduleEvery).
	FaultEvery time.Duration
	// RaiseLimits sets generous per-source and site-wide limits through
	// the admin API for the run, and restores the previous ones after,
	// so that 429 answers stay rare.
	RaiseLimits bool
	// SettleTimeout bounds the wait for the healed cluster to converge.
	SettleTimeout time.Duration
	// CheckTimeout bounds porcupine.
	CheckTimeout time.Duration
	// OutDir receives the history and the visualisation when a violation
	// is found ("" → the current directory).
	OutDir string
	// HistoryFile, when set, receives the history whatever the outcome.
	HistoryFile string
	// ProgressEvery is the interval of progress lines.
	ProgressEvery time.Duration
	Logger        *slog.Logger
}

// Defaults returns the configuration of `restarea chaos` with no flags.
func Defaults() Config {
	return Config{
		Workers: 8, Fanout: 3, Duration: 30 * time.Second, Seed: 1, RaiseLimits: true,
		SettleTimeout: time.Minute, CheckTimeout: time.Minute, ProgressEvery: 5 * time.Second,
	}
}

func (c Config) withDefaults() Config {
	d := Defaults()
	if c.Workers <= 0 {
		c.Workers = d.Workers
	}
	if c.Fanout <= 0 {
		c.Fanout = d.Fanout
	}
	if c.Duration <= 0 {
		c.Duration = d.Duration
	}
	if c.SettleTimeout <= 0 {
		c.SettleTimeout = d.SettleTimeout
	}
	if c.CheckTimeout <= 0 {
		c.CheckTimeout = d.CheckTimeout
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = d.ProgressEvery
	}
	if c.OutDir == "" {
		c.OutDir = "."
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// generous are the limits RaiseLimits sets: the largest the settings
// accept.
var generous = restarea.Settings{
	PerSourceLimit: restarea.Limit{Count: 1_000_000, WindowSeconds: 60},
	GlobalLimit:    restarea.Limit{Count: 1_000_000, WindowSeconds: 3600},
}

// Run drives target: workload and faults for cfg.Duration (or cfg.MaxOps
// calls), then heals, waits for the cluster to settle, reads every
// node's state and checks the history. It returns an error only when the
// run could not take place (the cluster was never ready, the admin API is
// unreachable); what the cluster did wrong is in Report.Violations.
func Run(ctx context.Context, target Target, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	log := cfg.Logger
	urls := target.URLs()
	if len(urls) == 0 {
		return nil, errors.New("chaos: the target has no nodes")
	}
	if target.AdminToken() == "" {
		return nil, errors.New("chaos: an admin token is needed to read each node's entries")
	}
	hc := newHTTPClient()
	defer hc.CloseIdleConnections()
	rctx, cancel := context.WithTimeout(ctx, cfg.SettleTimeout)
	err := settle(rctx, hc, urls)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("chaos: cluster not ready: %w", err)
	}
	if cfg.RaiseLimits {
		restore, err := raiseLimits(ctx, hc, urls[0], target.AdminToken())
		if err != nil {
			return nil, err
		}
		defer restore()
	}

	hist := NewHistory()
	mcps := newMCPPool(urls, hc)
	defer mcps.close()
	w := &workload{cfg: cfg, urls: urls, hc: hc, mcp: mcps, hist: hist}
	mon := newMonitor(hc, urls)
	mon.token, mon.now = target.AdminToken(), hist.Now
	mon.observe(ctx)

	var faults *faultRunner
	driver := target.Faults()
	if cfg.NoFaults {
		driver = nil
	}
	var restarter GracefulRestarter
	var upgrades Upgrader
	if cfg.Upgrade != nil {
		u, ok := driver.(Upgrader)
		if !ok || cfg.RollingRestart {
			return nil, fmt.Errorf("chaos: %s cannot change its nodes' binaries (a rolling upgrade needs --local, without --rolling-restart)", target.Name())
		}
		upgrades = u
	}
	if cfg.RollingRestart {
		g, ok := driver.(GracefulRestarter)
		if !ok {
			return nil, fmt.Errorf("chaos: %s cannot be restarted gracefully (a rolling restart needs --local, --compose or --fault-driver compose)", target.Name())
		}
		restarter = g
	}

	// The workload of a rolling restart runs until the last round is done,
	// even past Duration, and a little after it, so that the last node's
	// restart is measured under load too.
	var runCtx context.Context
	var stopRun context.CancelFunc
	if restarter != nil || upgrades != nil {
		runCtx, stopRun = context.WithCancel(ctx)
	} else {
		runCtx, stopRun = context.WithTimeout(ctx, cfg.planned())
	}
	defer stopRun()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var watchers, faulting sync.WaitGroup
	watchers.Add(1)
	go func() { defer watchers.Done(); mon.run(watchCtx, 250*time.Millisecond) }()

	var rollErr error
	var upg *upgrader
	switch {
	case upgrades != nil:
		faults = &faultRunner{d: driver, mon: mon, n: len(urls), hist: hist, log: log}
		upg = &upgrader{r: faults, u: upgrades, hc: hc, urls: urls, token: target.AdminToken(), plan: *cfg.Upgrade, w: w, pace: defaultPace}
		if err := upg.versions(); err != nil {
			return nil, err
		}
		log.Info("rolling upgrade planned", "from", upg.rep.FromVersion, "to", upg.rep.ToVersion, "nodes", len(urls),
			"downgrade_one", cfg.Upgrade.DowngradeOne, "finalize", cfg.Upgrade.Finalize)
		faulting.Add(1)
		go func() {
			defer faulting.Done()
			upg.run(ctx, cfg.Duration)
			stopRun()
		}()
	case restarter != nil:
		faults = &faultRunner{d: driver, mon: mon, n: len(urls), hist: hist, log: log}
		faulting.Add(1)
		go func() {
			defer faulting.Done()
			rollErr = faults.rolling(ctx, restarter, hc, urls, cfg.Duration)
			sleep(ctx, rollingGap)
			stopRun()
		}()
	case driver != nil:
		classes, err := faultClasses(cfg.Faults, driver.Kinds())
		if err != nil {
			return nil, fmt.Errorf("chaos: %s: %w", target.Name(), err)
		}
		events := ScheduleEvery(cfg.Seed, cfg.planned(), cfg.FaultEvery, classes, len(urls))
		log.Info("fault schedule", "faults", len(events), "classes", classes, "seed", cfg.Seed)
		faults = &faultRunner{d: driver, mon: mon, n: len(urls), hist: hist, log: log}
		if slices.Contains(classes, ClassRot) {
			if _, ok := driver.(RotDriver); !ok {
				return nil, fmt.Errorf("chaos: %s cannot damage files (the rot faults need --local)", target.Name())
			}
			faults.rots = &rots{}
		}
		if slices.Contains(classes, ClassMembership) || slices.Contains(classes, ClassRot) {
			md, ok := driver.(MemberDriver)
			if !ok {
				return nil, fmt.Errorf("chaos: %s cannot change members (the membership faults need --local)", target.Name())
			}
			if faults.mem, err = newMembers(md, hc, urls, target.AdminToken()); err != nil {
				return nil, err
			}
			mon.watchExtra(faults.mem.extraURLs)
		}
		faulting.Add(1)
		go func() { defer faulting.Done(); faults.run(runCtx, events) }()
	}
	watchers.Add(1)
	go func() { defer watchers.Done(); progress(watchCtx, cfg, hist, faults, mon) }()
	if restarter == nil && cfg.planned() > cfg.Duration {
		watchers.Add(1)
		go func() { defer watchers.Done(); untilCounts(runCtx, cfg, hist, faults, stopRun) }()
	}

	log.Info("chaos run started", "target", target.Name(), "nodes", len(urls), "workers", cfg.Workers, "duration", cfg.Duration, "ops", cfg.MaxOps)
	w.run(runCtx)
	// Ending runCtx makes the fault runner undo the fault in force; the
	// monitor keeps counting leader changes until it has.
	stopRun()
	faulting.Wait()
	stopWatch()
	watchers.Wait()
	if rollErr != nil {
		log.Warn("rolling restart ended early", "err", rollErr)
	}
	if driver != nil && restarter == nil && upg == nil {
		hctx, cancel := context.WithTimeout(context.Background(), undoTimeout)
		if err := driver.Heal(hctx); err != nil {
			log.Warn("heal", "err", err)
		}
		cancel()
	}
	// The check runs even when ctx was cancelled (an interrupted run is
	// still checked); its own timeouts bound it.
	return check(context.WithoutCancel(ctx), cfg, target, hc, hist, faults, mon, upg)
}

// check waits for the healed cluster to settle, reads every node's
// final state and checks it and the history.
func check(ctx context.Context, cfg Config, target Target, hc *http.Client, hist *History, faults *faultRunner, mon *monitor, upg *upgrader) (*Report, error) {
	log := cfg.Logger
	urls := target.URLs()
	ops := hist.Ops()
	rep := &Report{Target: target.Name(), Seed: cfg.Seed, Workers: cfg.Workers, Duration: cfg.Duration.String(),
		Elapsed: time.Duration(hist.Now()).Round(time.Millisecond).String(), Faults: faults.done(), LeaderChanges: mon.leaderChanges()}
	if rep.Faults == nil {
		rep.Faults = []FaultRecord{}
	}
	rep.tally(ops)
	reqs, vs := summarize(ops)
	ack := acked(reqs)
	rep.Requests, rep.Acknowledged = len(reqs), len(ack)

	log.Info("settling", "timeout", cfg.SettleTimeout)
	sctx, cancel := context.WithTimeout(ctx, cfg.SettleTimeout)
	if err := settle(sctx, hc, urls); err != nil {
		vs = append(vs, violation(VNoFinalState, "", -1, "%v", err))
	}
	cancel()
	states := make([]nodeEntries, len(urls))
	for i, u := range urls {
		st, err := readEntries(ctx, hc, u, target.AdminToken())
		if err != nil {
			vs = append(vs, violation(VNoFinalState, "", i, "reading entries: %v", err))
			continue
		}
		states[i] = st
	}
	for _, st := range states {
		if st != nil {
			for rid := range reqs {
				rep.Stored += len(st[rid])
			}
			break
		}
	}
	vs = append(vs, checkState(reqs, states)...)
	log.Info("reading acknowledged entries from every node", "entries", len(ack), "nodes", len(urls))
	vs = append(vs, checkReadable(readAll(ctx, hc, urls, ack))...)
	if cfg.RollingRestart || upg != nil {
		vs = append(vs, checkRolling(ops, rep.Faults)...)
	}
	if upg != nil {
		log.Info("checking the upgrade")
		var uvs []Violation
		rep.Upgrade, uvs = upg.report(ctx, ops)
		vs = append(vs, uvs...)
	}
	vs = append(vs, mon.terms.violations()...)
	if faults != nil {
		vs = append(vs, faults.rots.violations()...)
	}
	rep.LeaderTerms = mon.terms.terms()
	if faults != nil && faults.mem != nil {
		log.Info("checking that the members converged")
		ids, err := memberIDs(ctx, hc, urls)
		if err != nil {
			vs = append(vs, violation(VMembership, "", -1, "%v", err))
		} else {
			vs = append(vs, checkMembers(ctx, hc, urls, target.AdminToken(), ids, cfg.SettleTimeout)...)
			rep.Members = ids
		}
	}

	log.Info("checking linearizability", "operations", len(ops))
	pops := PorcupineOps(ops)
	illegal, complete := linearizability(pops, cfg.CheckTimeout)
	rep.Linearizable = "yes"
	if !complete {
		rep.Linearizable = "unknown"
	}
	if len(illegal) > 0 {
		rep.Linearizable = "no"
	}
	for _, rid := range illegal {
		vs = append(vs, violation(VNotLinearizable, rid, -1, "no order of the calls on this request_id explains their answers"))
	}
	rep.Violations = vs
	if rep.Violations == nil {
		rep.Violations = []Violation{}
	}
	if err := writeEvidence(cfg, rep, ops, pops, illegal); err != nil {
		return rep, err
	}
	return rep, nil
}

// writeEvidence writes the history (on a violation, or when asked) and,
// on a violation, porcupine's visualisation of the request_ids involved.
func writeEvidence(cfg Config, rep *Report, ops []Op, pops []porcupine.Operation, illegal []string) error {
	path := cfg.HistoryFile
	if path == "" && !rep.OK() {
		path = filepath.Join(cfg.OutDir, fmt.Sprintf("chaos-history-%d.jsonl", cfg.Seed))
	}
	if path != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := WriteHistory(path, ops); err != nil {
			return fmt.Errorf("chaos: write history: %w", err)
		}
		rep.HistoryFile = path
	}
	if rep.OK() {
		return nil
	}
	rids := map[string]bool{}
	for _, rid := range illegal {
		rids[rid] = true
	}
	for _, v := range rep.Violations {
		if v.RequestID != "" && len(rids) < 200 {
			rids[v.RequestID] = true
		}
	}
	if len(rids) == 0 {
		return nil
	}
	html := filepath.Join(cfg.OutDir, fmt.Sprintf("chaos-linearizability-%d.html", cfg.Seed))
	if err := visualize(pops, rids, html); err != nil {
		return fmt.Errorf("chaos: write visualisation: %w", err)
	}
	rep.VisualizationFile = html
	return nil
}

// progress logs a line every cfg.ProgressEvery until ctx ends.
func progress(ctx context.Context, cfg Config, hist *History, faults *faultRunner, mon *monitor) {
	t := time.NewTicker(cfg.ProgressEvery)
	defer t.Stop()
	// The counts grow with the calls recorded since the last line, so a
	// soak of millions of calls does not copy its history every line.
	counts := map[string]int{}
	seen := 0
	for range maxPolls {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, op := range hist.OpsFrom(seen) {
			seen++
			if op.Kind == OpPost {
				counts[op.Outcome]++
			}
		}
		var parts []string
		for _, row := range postRows {
			if n := counts[row.outcome]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s=%d", row.outcome, n))
			}
		}
		cfg.Logger.Info("progress", "elapsed", time.Duration(hist.Now()).Round(time.Second), "ops", hist.Len(),
			"posts", strings.Join(parts, " "), "faults", len(faults.done()), "leader_changes", mon.leaderChanges())
	}
}

// planned is how long the workload may run: Duration, or MaxDuration
// when MinOps or MinFaults may extend the run.
func (c Config) planned() time.Duration {
	if (c.MinOps > 0 || c.MinFaults > 0) && c.MaxDuration > c.Duration {
		return c.MaxDuration
	}
	return c.Duration
}

// untilCounts ends the workload (stop) once Duration has passed and the
// run has made MinOps calls and injected MinFaults faults; ctx, bounded
// by MaxDuration, ends it otherwise.
func untilCounts(ctx context.Context, cfg Config, hist *History, faults *faultRunner, stop context.CancelFunc) {
	for range maxPolls * 10 {
		if time.Duration(hist.Now()) >= cfg.Duration && hist.Len() >= cfg.MinOps && len(faults.done()) >= cfg.MinFaults {
			cfg.Logger.Info("run long enough", "elapsed", time.Duration(hist.Now()).Round(time.Second), "ops", hist.Len(), "faults", len(faults.done()))
			stop()
			return
		}
		if !sleep(ctx, time.Second) {
			return
		}
	}
}

// raiseLimits sets generous limits through the admin API and returns a
// function that restores the previous ones.
func raiseLimits(ctx context.Context, hc *http.Client, u, token string) (func(), error) {
	var before restarea.Settings
	if err := getData(ctx, hc, u+"/api/v1/admin/settings", token, &before); err != nil {
		return nil, fmt.Errorf("chaos: read settings: %w", err)
	}
	put := func(s restarea.Settings) error {
		patch := restarea.SettingsPatch{PerSourceLimit: &s.PerSourceLimit, GlobalLimit: &s.GlobalLimit}
		var err error
		for try := range readAttempts {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = putSettings(cctx, hc, u, token, patch)
			cancel()
			if err == nil || !sleep(ctx, time.Duration(try+1)*300*time.Millisecond) {
				break
			}
		}
		return err
	}
	if before.PerSourceLimit == generous.PerSourceLimit && before.GlobalLimit == generous.GlobalLimit {
		return func() {}, nil
	}
	if err := put(generous); err != nil {
		return nil, fmt.Errorf("chaos: raise limits: %w", err)
	}
	return func() {
		if err := put(before); err != nil {
			slog.Warn("chaos: could not restore the limits", "err", err)
		}
	}, nil
}
