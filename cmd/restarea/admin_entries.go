package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/restarea/restarea"
)

// runEntriesList is `restarea admin entries list`: one page, or with
// --all every page, newest first.
func runEntriesList(name string, args []string) int {
	f := newAdminFlags(name, "[--limit N] [--cursor C] [--all] [--strong]")
	limit := f.fs.Int("limit", 0, fmt.Sprintf("entries per page, 1–%d (default 50; with --all %d)", restarea.MaxPageLimit, restarea.MaxPageLimit))
	cursor := f.fs.String("cursor", "", "start after this cursor (the next_cursor of the page before)")
	all := f.fs.Bool("all", false, "page through to the last entry and print them all")
	strong := f.fs.Bool("strong", false, "read through the leader (linearizable)")
	a, _, code, ok := f.setup(args, 0)
	if !ok {
		return code
	}
	if *limit < 0 || *limit > restarea.MaxPageLimit {
		return f.usage("--limit must be between 1 and %d", restarea.MaxPageLimit)
	}
	ctx, stop := adminContext()
	defer stop()
	opts := restarea.ListOptions{Limit: *limit, Cursor: *cursor, Consistency: consistency(*strong)}
	if !*all {
		page, err := a.ListEntries(ctx, opts)
		if err != nil {
			return f.fail(err)
		}
		if f.output == "json" {
			return printJSON(os.Stdout, page)
		}
		printEntries(os.Stdout, page.Entries)
		if page.NextCursor != nil && *page.NextCursor != "" {
			fmt.Fprintf(os.Stderr, "more entries: add --cursor %s (or --all)\n", *page.NextCursor)
		}
		return adminOK
	}
	if opts.Limit == 0 {
		opts.Limit = restarea.MaxPageLimit
	}
	// Page by page to the output, so that a board of millions of entries
	// is not held in memory first. A failure midway leaves a truncated
	// document (invalid JSON) and a non-zero exit.
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	var list entryLister = &entryTable{w: out}
	if f.output == "json" {
		list = &entryJSON{w: out}
	}
	for page, err := range a.Entries(ctx, opts) {
		if err != nil {
			out.Flush()
			return f.fail(err)
		}
		list.add(page.Entries)
	}
	list.end()
	return adminOK
}

// entryLister writes a list of entries a page at a time.
type entryLister interface {
	add([]restarea.Entry)
	end()
}

// entryTable writes the table, aligned page by page (the columns are
// mostly of fixed width: ids, times, cut texts).
type entryTable struct {
	w       io.Writer
	started bool
}

func (t *entryTable) add(entries []restarea.Entry) {
	if len(entries) > 0 || !t.started {
		printEntryRows(t.w, entries, !t.started)
		t.started = true
	}
}

func (t *entryTable) end() {}

// entryJSON writes the document printJSON would write for an EntryPage
// holding every entry, with no next_cursor.
type entryJSON struct {
	w io.Writer
	n int
}

func (j *entryJSON) add(entries []restarea.Entry) {
	for _, e := range entries {
		b, _ := json.MarshalIndent(e, "    ", "  ")
		sep := ",\n    "
		if j.n == 0 {
			sep = "{\n  \"entries\": [\n    "
		}
		fmt.Fprintf(j.w, "%s%s", sep, b)
		j.n++
	}
}

func (j *entryJSON) end() {
	if j.n == 0 {
		fmt.Fprint(j.w, "{\n  \"entries\": [],\n  \"next_cursor\": null\n}\n")
		return
	}
	fmt.Fprint(j.w, "\n  ],\n  \"next_cursor\": null\n}\n")
}

// runEntriesShow is `restarea admin entries show ID`.
func runEntriesShow(name string, args []string) int {
	f := newAdminFlags(name, "ID [--strong]")
	strong := f.fs.Bool("strong", false, "read through the leader (linearizable)")
	a, pos, code, ok := f.setup(args, 1)
	if !ok {
		return code
	}
	ctx, stop := adminContext()
	defer stop()
	e, err := a.Entry(ctx, pos[0], consistency(*strong))
	if err != nil {
		return f.fail(err)
	}
	if f.output == "json" {
		return printJSON(os.Stdout, e)
	}
	printEntry(os.Stdout, e)
	return adminOK
}

func runEntriesHide(name string, args []string) int { return changeVisibility(name, args, true) }

func runEntriesUnhide(name string, args []string) int { return changeVisibility(name, args, false) }

// changeVisibility hides or unhides the entry named in args and prints
// it as it is now.
func changeVisibility(name string, args []string, hide bool) int {
	f := newAdminFlags(name, "ID")
	a, pos, code, ok := f.setup(args, 1)
	if !ok {
		return code
	}
	ctx, stop := adminContext()
	defer stop()
	change := a.UnhideEntry
	if hide {
		change = a.HideEntry
	}
	e, err := change(ctx, pos[0])
	if err != nil {
		return f.fail(err)
	}
	if f.output == "json" {
		return printJSON(os.Stdout, e)
	}
	printEntries(os.Stdout, []restarea.Entry{e})
	return adminOK
}

// runEntriesDelete is `restarea admin entries delete ID --yes`. It asks
// no question (scripts run it), so the flag is the confirmation.
func runEntriesDelete(name string, args []string) int {
	f := newAdminFlags(name, "ID --yes")
	yes := f.fs.Bool("yes", false, "confirm: the entry's text is erased for good")
	a, pos, code, ok := f.setup(args, 1)
	if !ok {
		return code
	}
	if !*yes {
		return f.usage("deleting erases the entry's text for good (only a tombstone of its request_id stays); add --yes to confirm, or use 'entries hide %s'", pos[0])
	}
	ctx, stop := adminContext()
	defer stop()
	d, err := a.DeleteEntry(ctx, pos[0])
	if err != nil {
		return f.fail(err)
	}
	if f.output == "json" {
		return printJSON(os.Stdout, d)
	}
	fmt.Fprintf(os.Stdout, "deleted %s\n", d.ID)
	return adminOK
}

func consistency(strong bool) restarea.Consistency {
	if strong {
		return restarea.ConsistencyStrong
	}
	return restarea.ConsistencyLocal
}
