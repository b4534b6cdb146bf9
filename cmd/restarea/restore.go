package main

import (
	"context"
	"flag"
	"fmt"
	"io"
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
	if !parseFlags(fs, args) {
		return 2
	}
	if *from == "" {
		fmt.Fprintln(os.Stderr, "restarea restore: --from FILE is required")
		return 2
	}
	if _, err := os.Stat(filepath.Join(*dataDir, "raft.db")); err == nil {
		fmt.Fprintf(os.Stderr, "restarea restore: %s already holds a node; restore only into a new data dir\n", *dataDir)
		return 1
	}
	cfg := d
	cfg.DataDir, cfg.RaftAddr, cfg.RaftAdvertise, cfg.NodeID = *dataDir, *raftAddr, *raftAdv, *nodeID
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.RaftLogOutput = io.Discard
	n, err := node.Start(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "restarea restore: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	err = n.RestoreBackup(ctx, *from)
	if cerr := n.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "restarea restore: %v\n", err)
		return 1
	}
	fmt.Printf("restored %s into %s (node %s); start it with: restarea serve --data-dir %s --raft-addr %s\n", *from, *dataDir, n.ID(), *dataDir, *raftAddr)
	return 0
}
