package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/restarea/restarea/node"
)

func init() {
	register("recover", "make a stopped node the single voter of a new cluster (a majority lost for good)", runRecover)
}

func runRecover(args []string) int {
	d := node.Defaults()
	fs := flag.NewFlagSet("recover", flag.ContinueOnError)
	dataDir := fs.String("data-dir", d.DataDir, "data directory of the stopped node")
	inspect := fs.Bool("inspect", false, "only print what the data directory holds (last index and term, members); changes nothing")
	raftAdv := fs.String("raft-advertise", "", "raft address the recovered node will be dialled at (default: the one its last configuration holds)")
	yes := fs.Bool("yes", false, "recover: without it, recover prints what it would do and changes nothing")
	output := fs.String("output", "text", "text or json")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: restarea recover --data-dir DIR [--inspect | --yes] [--raft-advertise ADDR] [--output text|json]

When a majority of the cluster's voters is lost for good, the survivors refuse writes for
ever. Stop every survivor, run --inspect on each, choose the one with the highest "last", and
run recover --yes on it: it becomes the single voter of a new configuration holding every entry
of its log. Start it, then join new (wiped) nodes to it. Entries committed only on the lost
machines are gone. See docs/disasters.md.

`)
		fs.PrintDefaults()
	}
	if !parseFlags(fs, args) {
		return 2
	}
	if *output != "text" && *output != "json" {
		fmt.Fprintf(os.Stderr, "restarea recover: --output must be text or json, not %q\n", *output)
		return 2
	}
	in, err := node.Inspect(*dataDir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "restarea recover: %v\n", err)
		return 1
	}
	if *inspect || !*yes {
		if *output == "json" {
			printJSON(os.Stdout, in)
		} else {
			printInspection(os.Stdout, in)
		}
		if !*inspect {
			fmt.Fprintf(os.Stderr, "\nnothing changed: add --yes to make node %s the single voter of a new configuration (every other member's data must then be wiped before it joins again)\n", in.NodeID)
			return 2
		}
		return 0
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	rec, err := node.Recover(*dataDir, node.RecoverOptions{RaftAdvertise: *raftAdv, Logger: logger})
	if err != nil {
		fmt.Fprintf(os.Stderr, "restarea recover: %v\n", err)
		return 1
	}
	if *output == "json" {
		printJSON(os.Stdout, rec)
		return 0
	}
	fmt.Printf("recovered node %s: the single voter at %s of a new configuration from index %d (term %d); the state holds %d entries\n",
		rec.Voter.ID, rec.Voter.Address, rec.Index, rec.Term, rec.Entries)
	fmt.Printf("lineage: %s (was %s): every member refuses a machine of the lost majority that comes back with its data, and such a machine stops and must be wiped\n", rec.Lineage, rec.Parent)
	fmt.Printf("next: start it (restarea serve --data-dir %s ...), then start new nodes with --join pointing at it\n", *dataDir)
	return 0
}

func printInspection(w io.Writer, in node.Inspection) {
	fmt.Fprintf(w, "node:           %s\n", in.NodeID)
	fmt.Fprintf(w, "last:           %d (term %d)\n", in.Last, in.LastTerm)
	fmt.Fprintf(w, "log:            %d..%d\n", in.FirstIndex, in.LastIndex)
	if s := in.Snapshot; s != nil {
		fmt.Fprintf(w, "snapshot:       %s (index %d, term %d, %d bytes)\n", s.ID, s.Index, s.Term, s.Size)
	} else {
		fmt.Fprintf(w, "snapshot:       none\n")
	}
	fmt.Fprintf(w, "state applied:  %d\n", in.StateApplied)
	fmt.Fprintf(w, "lineage:        %s (parent %s)\n", in.Lineage, in.Parent)
	fmt.Fprintf(w, "configuration:  at index %d\n", in.ConfigurationIndex)
	for _, s := range in.Servers {
		role := "nonvoter"
		if s.Voter {
			role = "voter"
		}
		fmt.Fprintf(w, "  %-20s %-8s %s\n", s.ID, role, s.Address)
	}
}
