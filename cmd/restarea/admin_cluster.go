package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/client"
)

// runMembersList is `restarea admin members list`.
func runMembersList(name string, args []string) int {
	f := newAdminFlags(name, "")
	a, _, code, ok := f.setup(args, 0)
	if !ok {
		return code
	}
	ctx, stop := adminContext()
	defer stop()
	m, err := a.Members(ctx)
	if err != nil {
		return f.fail(err)
	}
	if f.output == "json" {
		return printJSON(os.Stdout, m)
	}
	tw := newTable(os.Stdout)
	row(tw, "ID", "SUFFRAGE", "ROLE", "RAFT_ADDR", "URL")
	for _, mb := range m.Members {
		role := "-"
		if mb.ID == m.LeaderID {
			role = "leader"
		}
		row(tw, cell(mb.ID, 0), cell(mb.Suffrage, 0), role, cell(mb.RaftAddr, 0), cell(mb.URL, 0))
	}
	tw.Flush()
	return adminOK
}

// runMembersRemove is `restarea admin members remove ID --yes`.
func runMembersRemove(name string, args []string) int {
	f := newAdminFlags(name, "ID --yes")
	yes := f.fs.Bool("yes", false, "confirm: the server leaves the cluster (it must join again to come back)")
	a, pos, code, ok := f.setup(args, 1)
	if !ok {
		return code
	}
	if !*yes {
		return f.usage("removing %s takes it out of the cluster (and out of the quorum); add --yes to confirm", pos[0])
	}
	ctx, stop := adminContext()
	defer stop()
	r, err := a.RemoveMember(ctx, pos[0])
	if err != nil {
		return f.fail(err)
	}
	if f.output == "json" {
		return printJSON(os.Stdout, r)
	}
	fmt.Fprintf(os.Stdout, "removed %s\n", r.ID)
	return adminOK
}

// runLeaderTransfer is `restarea admin leader transfer [--to ID]`. After
// the transfer it waits (within --timeout) until a node names the new
// leader, so that what it prints is the outcome, not the election.
func runLeaderTransfer(name string, args []string) int {
	f := newAdminFlags(name, "[--to ID]")
	to := f.fs.String("to", "", "the member to hand leadership to (default: the most up-to-date other voter)")
	a, _, code, ok := f.setup(args, 0)
	if !ok {
		return code
	}
	ctx, stop := adminContext()
	defer stop()
	// The leader before, to recognise the new one: the transfer's answer
	// may still name the old leader, whose view it is.
	var before string
	if st, err := a.ClusterStatus(ctx); err == nil {
		before = st.LeaderID
	}
	st, err := a.TransferLeadership(ctx, *to)
	if err != nil {
		return f.fail(err)
	}
	st = awaitLeader(ctx, a, st, *to, before, f.timeout)
	if f.output == "json" {
		return printJSON(os.Stdout, st)
	}
	if st.LeaderID == "" {
		fmt.Fprintf(os.Stdout, "leadership transferred; no leader is known yet (term %d): see 'restarea admin status'\n", st.Term)
		return adminOK
	}
	fmt.Fprintf(os.Stdout, "leader: %s (term %d)\n", st.LeaderID, st.Term)
	return adminOK
}

// awaitLeader polls the cluster status until it names the new leader: to
// when given, else any leader but before. It gives up after wait and
// returns the last status it got.
func awaitLeader(ctx context.Context, a *client.Admin, st restarea.ClusterStatus, to, before string, wait time.Duration) restarea.ClusterStatus {
	done := func(s restarea.ClusterStatus) bool {
		if to != "" {
			return s.LeaderID == to
		}
		return s.LeaderID != "" && s.LeaderID != before
	}
	deadline := time.Now().Add(wait)
	for !done(st) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		if s, err := a.ClusterStatus(ctx); err == nil {
			st = s
		}
	}
	return st
}

// runStatus is `restarea admin status`: every member's own answer to
// GET /api/v1/cluster. A member that does not answer is a row saying so;
// the command fails only when no member list could be had.
func runStatus(name string, args []string) int {
	f := newAdminFlags(name, "")
	a, _, code, ok := f.setup(args, 0)
	if !ok {
		return code
	}
	ctx, stop := adminContext()
	defer stop()
	v, err := a.Status(ctx)
	if err != nil {
		return f.fail(err)
	}
	if f.output == "json" {
		return printJSON(os.Stdout, v)
	}
	tw := newTable(os.Stdout)
	row(tw, "NODE", "URL", "STATE", "LEADER", "TERM", "APPLIED", "COMMIT", "LAG", "LOG_FORMAT", "CLUSTER_VERSION", "VERSION", "REVISION", "CV_MAX", "NOTE")
	for _, n := range v.Nodes {
		if n.Status == nil {
			row(tw, cell(n.ID, 0), cell(n.URL, 0), "unreachable", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", cell(strings.TrimPrefix(n.Error, "unreachable: "), 100))
			continue
		}
		s := n.Status
		lag := "?"
		if n.Lag != nil {
			lag = strconv.FormatUint(*n.Lag, 10)
		}
		note := "-"
		switch {
		case n.Error != "":
			note = cell(n.Error, 100)
		case n.Suffrage != "" && n.Suffrage != "voter":
			note = n.Suffrage
		}
		row(tw, cell(n.ID, 0), cell(n.URL, 0), cell(s.State, 0), cell(s.LeaderID, 0), strconv.FormatUint(s.Term, 10),
			strconv.FormatUint(s.AppliedIndex, 10), strconv.FormatUint(s.CommitIndex, 10), lag, strconv.Itoa(s.LogFormat),
			maxCell(s.ClusterVersion), cell(s.Version, 40), cell(shortCommit(s.Commit), 0), maxCell(s.ClusterVersionMax), note)
	}
	tw.Flush()
	if v.LeaderCommit == 0 && v.LeaderTerm == 0 {
		fmt.Fprintln(os.Stderr, "no member answered as leader: lag is unknown")
	}
	return adminOK
}

// shortCommit is a commit as a table shows it: a full hex commit cut to
// its first 12 digits, its "-dirty" kept; anything else as it came.
func shortCommit(c string) string {
	const full, short = 40, 12
	if len(c) < full || strings.Trim(c[:full], "0123456789abcdef") != "" {
		return c
	}
	return c[:short] + c[full:]
}

// runBackup is `restarea admin backup -o FILE`: the copy goes to a
// temporary file, is checked, and only then takes FILE's name; or
// `restarea admin backup --dir DIR [--keep N]`: the same under a new
// timestamped name in DIR, then the oldest beyond N are removed.
func runBackup(name string, args []string) int {
	f := newAdminFlags(name, "-o FILE [--force] | --dir DIR [--keep N]")
	f.defaultTimeout = 10 * time.Minute
	file := f.fs.String("o", "", "write the backup to this file")
	force := f.fs.Bool("force", false, "replace FILE if it exists (with -o)")
	dir := f.fs.String("dir", "", "write the backup into this directory as restarea-YYYYMMDDTHHMMSS.mmmZ.db (UTC)")
	keep := f.fs.Int("keep", 0, "with --dir: then remove the oldest restarea-*.db backups of DIR beyond the newest N (0 keeps all)")
	a, _, code, ok := f.setup(args, 0)
	if !ok {
		return code
	}
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	switch {
	case *file != "" && *dir != "":
		return f.usage("-o FILE and --dir DIR exclude each other")
	case *file == "" && *dir == "":
		return f.usage("-o FILE or --dir DIR is required")
	case *dir != "" && set["force"]:
		return f.usage("--force goes with -o: --dir never replaces a file")
	case *file != "" && set["keep"]:
		return f.usage("--keep goes with --dir")
	case *keep < 0:
		return f.usage("--keep must be 0 (keep every backup) or more")
	}
	if *dir != "" {
		return runBackupDir(f, a, *dir, *keep)
	}
	if _, err := os.Lstat(*file); err == nil && !*force {
		return f.usage("%s exists; add --force to replace it", *file)
	}
	ctx, stop := adminContext()
	defer stop()
	n, err := writeBackup(ctx, a, *file, *force)
	if err != nil {
		if errors.Is(err, errBackupExists) {
			return f.usage("%v", err)
		}
		return f.fail(err)
	}
	if f.output == "json" {
		return printJSON(os.Stdout, struct {
			File  string `json:"file"`
			Bytes int64  `json:"bytes"`
		}{*file, n})
	}
	fmt.Fprintf(os.Stdout, "wrote %s (%d bytes); restore it with: restarea restore --from %s --data-dir DIR\n", *file, n, *file)
	return adminOK
}

// runBackupDir is `restarea admin backup --dir DIR [--keep N]`, the form a
// timer or a CronJob runs.
func runBackupDir(f *adminFlags, a *client.Admin, dir string, keep int) int {
	if err := checkBackupDir(dir); err != nil {
		return f.usage("%v", err)
	}
	ctx, stop := adminContext()
	defer stop()
	path, n, removed, err := writeBackupDir(ctx, a, dir, keep, time.Now)
	if err != nil {
		return f.fail(err)
	}
	if removed == nil {
		removed = []string{}
	}
	if f.output == "json" {
		return printJSON(os.Stdout, struct {
			File    string   `json:"file"`
			Bytes   int64    `json:"bytes"`
			Removed []string `json:"removed"`
		}{path, n, removed})
	}
	fmt.Fprintf(os.Stdout, "wrote %s (%d bytes); restore it with: restarea restore --from %s --data-dir DIR\n", path, n, path)
	if len(removed) > 0 {
		fmt.Fprintf(os.Stdout, "removed %d older backup(s) beyond --keep %d: %s\n", len(removed), keep, backupList(removed))
	}
	return adminOK
}
