package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/restarea/restarea"
)

// runAuditList is `restarea admin audit list`: one page of the audit
// trail, newest first.
func runAuditList(name string, args []string) int {
	f := newAdminFlags(name, "[--limit N] [--cursor C]")
	limit := f.fs.Int("limit", 0, fmt.Sprintf("records per page, 1–%d (default 50)", restarea.MaxPageLimit))
	cursor := f.fs.String("cursor", "", "start after this cursor (the next_cursor of the page before)")
	a, _, code, ok := f.setup(args, 0)
	if !ok {
		return code
	}
	if *limit < 0 || *limit > restarea.MaxPageLimit {
		return f.usage("--limit must be between 1 and %d", restarea.MaxPageLimit)
	}
	ctx, stop := adminContext()
	defer stop()
	page, err := a.ListAudit(ctx, restarea.ListOptions{Limit: *limit, Cursor: *cursor})
	if err != nil {
		return f.fail(err)
	}
	if f.output == "json" {
		return printJSON(os.Stdout, page)
	}
	tw := newTable(os.Stdout)
	row(tw, "SEQ", "TIME", "ACTION", "TARGET", "CHANGES", "SOURCE")
	for _, r := range page.Records {
		target := "-"
		switch {
		case r.EntryID != "":
			target = r.EntryType + " " + r.EntryID
		case r.MemberID != "":
			target = "member " + r.MemberID
		}
		var changes []string
		for _, c := range r.Changes {
			changes = append(changes, fmt.Sprintf("%s: %s -> %s", c.Field, c.Before, c.After))
		}
		source := r.Source
		if r.FromConfig {
			source = "config"
		}
		if source == "" {
			source = "-"
		}
		row(tw, fmt.Sprint(r.Seq), r.Time.UTC().Format(time.RFC3339), string(r.Action), cell(target, 0),
			cell(strings.Join(changes, "; "), 0), cell(source, 0))
	}
	tw.Flush()
	if page.NextCursor != nil && *page.NextCursor != "" {
		fmt.Fprintf(os.Stderr, "more records: add --cursor %s\n", *page.NextCursor)
	}
	return adminOK
}
