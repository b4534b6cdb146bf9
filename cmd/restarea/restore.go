package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/restarea/restarea/node"
)

func init() {
	register("restore", "seed a new node's data dir from a backup", runRestore)
}

func runRestore(args []string) int {
	d := node.Defaults()
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	from := fs.String("from", "", "backup file (from GET /api/v1/admin/backup)")
	dataDir := fs.String("data-dir", d.DataDir, "data directory of the new node; must not hold a node yet")
	raftAddr := fs.String("raft-addr", d.RaftAddr, "raft address the node will serve with")
	raftAdv := fs.String("raft-advertise", "", "raft address other nodes dial (default: --raft-addr)")
	nodeID := fs.String("node-id", "", "node id (default: generated)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if !parseFlags(fs, args) {
		return 2
	}
	// Restore runs a node, so stderr carries the node's JSON lines only,
	// its own refusals included (docs/operating.md, "Logs").
	logger := jsonLogger(slog.LevelInfo)
	fail := func(code int, format string, a ...any) int {
		logger.Error("restarea restore: "+fmt.Sprintf(format, a...), "data_dir", *dataDir, "from", *from)
		return code
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fail(2, "--log-level: %v", err)
	}
	logger = jsonLogger(level)
	// Libraries that write through package log write JSON lines too.
	slog.SetDefault(logger)
	if *from == "" {
		return fail(2, "--from FILE is required")
	}
	if _, err := os.Stat(filepath.Join(*dataDir, "raft.db")); err == nil {
		return fail(1, "%s already holds a node; restore only into a new data dir", *dataDir)
	}
	cfg := d
	cfg.DataDir, cfg.RaftAddr, cfg.RaftAdvertise, cfg.NodeID = *dataDir, *raftAddr, *raftAdv, *nodeID
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Logger = logger
	cfg.RaftLogOutput = io.Discard
	n, err := node.Start(cfg)
	if err != nil {
		return fail(1, "%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	err = n.RestoreBackup(ctx, *from)
	if cerr := n.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	fmt.Printf("restored %s into %s (node %s); start it with: restarea serve --data-dir %s --raft-addr %s\n", *from, *dataDir, n.ID(), *dataDir, *raftAddr)
	return 0
}
