package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/restarea/restarea/internal/bench"
)

func init() {
	register("bench", "measure a cluster: posts, replays, reads, growth, vs the disk's fsync rate", runBench)
}

func runBench(args []string) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	local := fs.Int("local", 0, "start a local cluster of this many node processes and measure it")
	nodes := fs.String("nodes", "", "comma-separated URLs of a running cluster's nodes (instead of --local)")
	dir := fs.String("dir", "", "directory for data dirs and scratch files (default: a temporary one, removed afterwards)")
	quick := fs.Bool("quick", false, "small sizes and short phases: a smoke test that finishes in well under a minute")
	growth := fs.Bool("growth", false, "with --local: also seed single nodes of 10,000 and 1,000,000 entries for the growth, paging, disk and memory figures (adds many minutes)")
	profile := fs.String("profile", "", "with --local: also take CPU profiles of every node under 64 clients (new posts and replays on the cluster, new posts on the single node) into this directory")
	report := fs.String("report", "", "also write the figures as JSON to this file")
	attacks := fs.Bool("attacks", false, "instead: send each attack of the public port's budgets to a default single node of its own and print its peak memory, CPU and other clients' p50")
	attackBinary := fs.String("attack-binary", "", "with --attacks: the restarea binary to attack (default: this one; an older build gives the figures before a change)")
	only := fs.String("only", "", "with --attacks: comma-separated attacks to run (mcp-batch, mcp-batch-max, search, search-max, thread-view, posts-over-limit, console-refusals, raft-port)")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	if !parseFlags(fs, args) {
		return 2
	}
	if *attacks {
		return runAttacks(*attackBinary, *dir, *only, *quick, *report, *timeout)
	}
	var urls []string
	for _, u := range strings.Split(*nodes, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	if (*local > 0) == (len(urls) > 0) {
		fmt.Fprintln(os.Stderr, "restarea bench: give exactly one of --local N or --nodes URL,...")
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "restarea bench: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	rep, err := bench.Run(ctx, bench.Options{
		Binary: exe, Local: *local, URLs: urls, Dir: *dir, Quick: *quick, Growth: *growth, ProfileDir: *profile,
		Logf: func(format string, a ...any) {
			fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "restarea bench: %v\n", err)
		return 1
	}
	fmt.Println()
	rep.WriteTable(os.Stdout)
	if *report != "" {
		if err := rep.WriteJSON(*report); err != nil {
			fmt.Fprintf(os.Stderr, "restarea bench: --report: %v\n", err)
			return 1
		}
	}
	if rep.Replay != nil && !rep.Replay.Exact {
		fmt.Fprintln(os.Stderr, "restarea bench: the replay storm did not leave exactly the original entries")
		return 1
	}
	return 0
}

// runAttacks is `restarea bench --attacks`.
func runAttacks(binary, dir, only string, quick bool, report string, timeout time.Duration) int {
	if binary == "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(os.Stderr, "restarea bench: %v\n", err)
			return 1
		}
		binary = exe
	}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "restarea-attacks-")
		if err != nil {
			fmt.Fprintf(os.Stderr, "restarea bench: %v\n", err)
			return 1
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	var names []string
	for _, n := range strings.Split(only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	figs, err := bench.RunAttacks(ctx, bench.AttackOptions{
		Binary: binary, Dir: dir, Quick: quick, Only: names,
		Logf: func(format string, a ...any) {
			fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
		},
	})
	fmt.Println()
	bench.WriteAttackTable(os.Stdout, figs)
	if report != "" {
		b, _ := json.MarshalIndent(figs, "", "  ")
		if werr := os.WriteFile(report, append(b, '\n'), 0o644); werr != nil {
			fmt.Fprintf(os.Stderr, "restarea bench: --report: %v\n", werr)
			return 1
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "restarea bench: %v\n", err)
		return 1
	}
	return 0
}
