package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/restarea/restarea/internal/chaos"
	"github.com/restarea/restarea/internal/localcluster"
)

func init() {
	register("chaos", "chaos-test a cluster: concurrent replays under faults, history checked", runChaos)
}

func runChaos(args []string) int {
	d := chaos.Defaults()
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	local := fs.Int("local", 0, "start N node processes on loopback and test them")
	compose := fs.Bool("compose", false, "test the docker compose cluster (make cluster-up; ports from RESTAREA_PORT1..3, default 8081..8083)")
	nodes := fs.String("nodes", "", "comma-separated URLs of a running cluster to test (no faults unless --fault-driver)")
	faultDriver := fs.String("fault-driver", "", "with --nodes: \"compose\" to fault the nodes with docker (services node1..nodeN of --compose-project)")
	duration := fs.Duration("duration", d.Duration, "how long the workload runs")
	minOps := fs.Int("min-ops", 0, "run past --duration until this many calls were made (bounded by --max-duration)")
	minFaults := fs.Int("min-faults", 0, "run past --duration until this many faults were injected (bounded by --max-duration)")
	maxDuration := fs.Duration("max-duration", 0, "with --min-ops or --min-faults: the hard cap of the workload's time (default: twice --duration)")
	ops := fs.Int("ops", 0, "stop after this many calls (0: only --duration bounds the run)")
	seed := fs.Int64("seed", d.Seed, "seed of the fault schedule and the workers' choices")
	workers := fs.Int("workers", d.Workers, "concurrent workers")
	fanout := fs.Int("fanout", d.Fanout, "at most this many nodes get each new post at once")
	noFaults := fs.Bool("no-faults", false, "inject no faults")
	faultList := fs.String("faults", "", "comma-separated fault classes: kill, pause, partition, membership (--local only: remove a follower and rejoin it wiped under a new id, remove the leader, grow by two nodes and shrink back, replace a node by a fresh one under its id), or all (default: every class the target supports but membership)")
	faultEvery := fs.Duration("fault-interval", 0, "one fault per interval (default: an eighth of --duration, between 1s and 10s)")
	powerFS := fs.Bool("power-fs", false, "--local only: put each node's data directory on powerfs (a FUSE file system that simulates power cuts; needs FUSE), which adds the fault class power-cut: one node, a majority or all nodes lose power at once and reboot with a new boot id")
	rolling := fs.Bool("rolling-restart", false, "instead of random faults, restart every node gracefully in turn (SIGTERM, wait for /readyz), in rounds for --duration")
	upgradeFrom := fs.String("upgrade-from", "", "--local: start the nodes with this binary (the previous release) and replace them one at a time, under load, with --upgrade-to")
	upgradeTo := fs.String("upgrade-to", "", "with --upgrade-from: the binary to upgrade to (default: this one)")
	finalize := fs.Bool("finalize", false, "with --upgrade-from: once every node runs --upgrade-to, POST /api/v1/admin/cluster/finalize-upgrade and check that cluster_version rose on every node")
	downgradeOne := fs.Bool("downgrade-one", false, "with --upgrade-from: before finalizing, take one upgraded node back to the old binary and up again, under load")
	raise := fs.Bool("raise-limits", true, "raise the per-source and site-wide limits for the run through the admin API, restore them after (default false with --nodes)")
	adminToken := fs.String("admin-token", "", "admin bearer token of the cluster (--compose default: docker-compose.yml's)")
	reportFile := fs.String("report", "", "write the report as JSON to FILE")
	historyFile := fs.String("history", "", "write the history (JSON lines) to FILE, violation or not")
	outDir := fs.String("out", ".", "directory for the history and the visualisation written on a violation")
	dir := fs.String("dir", "", "--local: directory for the nodes' data and logs, kept (default: a temporary one, removed)")
	settleTimeout := fs.Duration("settle-timeout", d.SettleTimeout, "how long the healed cluster may take to converge")
	project := fs.String("compose-project", "restarea", "docker compose project name")
	checkTimeout := fs.Duration("check-timeout", d.CheckTimeout, "how long the linearizability check may take in all (each request_id at most 10s); past it the verdict is unknown")
	pprofAddr := fs.String("pprof-addr", "", "serve Go's /debug/pprof/ of this command (the harness, and powerfs with --power-fs) on this address")
	if !parseFlags(fs, args) {
		return 2
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "restarea chaos: "+format+"\n", a...)
		return 2
	}
	targets := 0
	for _, set := range []bool{*local > 0, *compose, *nodes != ""} {
		if set {
			targets++
		}
	}
	switch {
	case targets != 1:
		return usage("give exactly one of --local N, --compose, --nodes URL,...")
	case *local < 0:
		return usage("--local must be positive")
	case *duration <= 0:
		return usage("--duration must be positive")
	case *ops < 0 || *workers < 1 || *fanout < 1:
		return usage("--ops must be >= 0, --workers and --fanout >= 1")
	case *faultDriver != "" && (*nodes == "" || *faultDriver != "compose"):
		return usage("--fault-driver compose goes with --nodes")
	case *minOps < 0 || *minFaults < 0 || *maxDuration < 0:
		return usage("--min-ops, --min-faults and --max-duration must not be negative")
	case *maxDuration > 0 && *maxDuration < *duration:
		return usage("--max-duration must be at least --duration")
	case *faultEvery < 0:
		return usage("--fault-interval must not be negative")
	case *checkTimeout <= 0:
		return usage("--check-timeout must be positive")
	case *rolling && *noFaults:
		return usage("--rolling-restart and --no-faults exclude each other")
	case *rolling && *nodes != "" && *faultDriver == "":
		return usage("--rolling-restart with --nodes needs --fault-driver compose")
	}
	classes, err := chaos.ParseFaultClasses(*faultList)
	if err != nil {
		return usage("--faults: %v", err)
	}
	upgrade, msg := upgradePlan(*upgradeFrom, *upgradeTo, *finalize, *downgradeOne, *local > 0, *rolling || *noFaults || classes != nil)
	if msg != "" {
		return usage("%s", msg)
	}
	if classes != nil && (*noFaults || *rolling) {
		return usage("--faults excludes --no-faults and --rolling-restart")
	}
	if classes != nil && *nodes != "" && *faultDriver == "" {
		return usage("--faults with --nodes needs --fault-driver compose")
	}
	if *powerFS && *local == 0 {
		return usage("--power-fs needs --local")
	}
	chaosPowerFS = *powerFS
	chaosRot = slices.Contains(classes, chaos.ClassRot) || slices.Contains(classes, "all")
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if *nodes != "" && !explicit["raise-limits"] {
		*raise = false
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if *pprofAddr != "" {
		servePprof(*pprofAddr, logger)
	}
	// The first interrupt ends the workload early (the run is still
	// healed and checked); a second one kills the command.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }()

	target, err := chaosTarget(ctx, logger, *local, *compose, *nodes, *faultDriver, *project, *adminToken, *dir, *upgradeFrom)
	if err != nil {
		logger.Error("cannot set up the target", "err", err)
		return 1
	}
	defer target.Close()

	cfg := d
	cfg.Workers, cfg.Fanout, cfg.Duration, cfg.MaxOps, cfg.Seed = *workers, *fanout, *duration, *ops, *seed
	cfg.NoFaults, cfg.RollingRestart, cfg.RaiseLimits, cfg.SettleTimeout = *noFaults, *rolling, *raise, *settleTimeout
	cfg.OutDir, cfg.HistoryFile, cfg.Logger = *outDir, *historyFile, logger
	cfg.Faults, cfg.FaultEvery, cfg.Upgrade = classes, *faultEvery, upgrade
	cfg.MinOps, cfg.MinFaults, cfg.MaxDuration = *minOps, *minFaults, *maxDuration
	cfg.CheckTimeout = *checkTimeout
	if (*minOps > 0 || *minFaults > 0) && *maxDuration == 0 {
		cfg.MaxDuration = 2 * *duration
	}
	rep, err := chaos.Run(ctx, target, cfg)
	if err != nil {
		logger.Error("chaos run failed", "err", err)
		if rep == nil {
			return 1
		}
	}
	rep.Print(os.Stdout)
	if *reportFile != "" {
		if err := rep.WriteJSON(*reportFile); err != nil {
			logger.Error("write report", "err", err)
			return 1
		}
	}
	if !rep.OK() || err != nil {
		return 1
	}
	return 0
}

// chaosPowerFS is --power-fs, for chaosTarget.
var chaosPowerFS bool

// chaosRot says the run may take rot faults, for chaosTarget: the nodes
// then scrub their state files fast (chaos.RotArgs).
var chaosRot bool

// chaosTarget sets up the one target the flags name.
func chaosTarget(ctx context.Context, logger *slog.Logger, local int, compose bool, nodes, driver, project, token, dir, binary string) (chaos.Target, error) {
	switch {
	case local > 0:
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		args := slices.Clone(chaos.LocalArgs)
		if chaosRot {
			args = append(args, chaos.RotArgs...)
		}
		c, err := localcluster.Start(sctx, localcluster.Options{
			Binary: binary, Nodes: local, Dir: dir, AdminToken: token, Args: args, TestClock: true, PowerFS: chaosPowerFS,
			Logf: func(format string, a ...any) { logger.Info(fmt.Sprintf(format, a...)) },
		})
		if err != nil {
			return nil, err
		}
		return chaos.NewLocal(c), nil
	case compose:
		opts := chaos.ComposeDefaults()
		opts.Project = project
		// docker-compose.yml publishes node N on RESTAREA_PORTN.
		for i := range opts.URLs {
			if p := os.Getenv(fmt.Sprintf("RESTAREA_PORT%d", i+1)); p != "" {
				opts.URLs[i] = "http://127.0.0.1:" + p
			}
		}
		if token != "" {
			opts.AdminToken = token
		}
		return chaos.NewCompose(ctx, opts)
	}
	urls := strings.Split(nodes, ",")
	for i := range urls {
		urls[i] = strings.TrimSpace(urls[i])
	}
	var fd chaos.FaultDriver
	if driver == "compose" {
		opts := chaos.ComposeDefaults()
		opts.Project, opts.URLs, opts.Services = project, urls, nil
		for i := range urls {
			opts.Services = append(opts.Services, fmt.Sprintf("node%d", i+1))
		}
		if token != "" {
			opts.AdminToken = token
		}
		c, err := chaos.NewCompose(ctx, opts)
		if err != nil {
			return nil, err
		}
		fd = c
	}
	return chaos.NewRemote(urls, token, fd), nil
}

// upgradePlan checks the flags of a rolling upgrade and returns its plan
// (nil without --upgrade-from), or what is wrong with them. local says
// --local was given; otherFaults that --rolling-restart, --no-faults or
// --faults was.
func upgradePlan(from, to string, finalize, downgradeOne, local, otherFaults bool) (*chaos.Upgrade, string) {
	if from == "" {
		if to != "" || finalize || downgradeOne {
			return nil, "--upgrade-to, --finalize and --downgrade-one go with --upgrade-from"
		}
		return nil, ""
	}
	if !local {
		return nil, "--upgrade-from needs --local N"
	}
	if otherFaults {
		return nil, "--upgrade-from excludes --rolling-restart, --no-faults and --faults"
	}
	if to == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Sprintf("--upgrade-to: this binary's path: %v", err)
		}
		to = exe
	}
	for _, f := range []struct{ name, path string }{{"--upgrade-from", from}, {"--upgrade-to", to}} {
		abs, err := filepath.Abs(f.path)
		if err != nil {
			return nil, fmt.Sprintf("%s %q: %v", f.name, f.path, err)
		}
		st, err := os.Stat(abs)
		switch {
		case err != nil:
			return nil, fmt.Sprintf("%s: %v", f.name, err)
		case st.IsDir() || st.Mode().Perm()&0o111 == 0:
			return nil, fmt.Sprintf("%s %q is not an executable file", f.name, f.path)
		}
		if f.name == "--upgrade-from" {
			from = abs
		} else {
			to = abs
		}
	}
	return &chaos.Upgrade{From: from, To: to, Finalize: finalize, DowngradeOne: downgradeOne}, ""
}
