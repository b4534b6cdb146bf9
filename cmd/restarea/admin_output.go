package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/restarea/restarea"
)

// printJSON writes v as one indented JSON document.
func printJSON(w io.Writer, v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintf(os.Stderr, "restarea admin: %v\n", err)
		return adminRefused
	}
	fmt.Fprintf(w, "%s\n", b)
	return adminOK
}

// newTable returns a tabwriter for aligned columns; call Flush.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// row writes one tab-separated row.
func row(tw *tabwriter.Writer, cells ...string) {
	fmt.Fprintln(tw, strings.Join(cells, "\t"))
}

// cell makes untrusted text safe for one table cell: line breaks and tabs
// become spaces (they would break the row), other control characters —
// the C1 ones, such as U+009B, are accepted in posts and some terminals
// act on them — become U+FFFD, and the result is cut to max characters.
func cell(s string, max int) string {
	r := []rune(clean(s, false))
	if max > 0 && len(r) > max {
		return string(r[:max-1]) + "…"
	}
	if len(r) == 0 {
		return "-"
	}
	return string(r)
}

// clean replaces control characters; keepLines keeps "\n" and "\t" (for
// a body printed on its own lines).
func clean(s string, keepLines bool) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			if keepLines {
				return r
			}
			return ' '
		case unicode.IsControl(r):
			return unicode.ReplacementChar
		}
		return r
	}, s)
}

// entryState is the operators' word for an entry's visibility.
func entryState(e restarea.Entry) string {
	if e.Visible {
		return "visible"
	}
	return "hidden"
}

// entryText is what a table shows of an entry: a question's title, a
// reply's body.
func entryText(e restarea.Entry) string {
	if e.Title != "" {
		return e.Title
	}
	return e.Body
}

// printEntries writes entries as a table, one row each.
func printEntries(w io.Writer, entries []restarea.Entry) { printEntryRows(w, entries, true) }

// printEntryRows writes entries as table rows, after the header if
// header is set.
func printEntryRows(w io.Writer, entries []restarea.Entry, header bool) {
	tw := newTable(w)
	if header {
		row(tw, "ID", "TYPE", "STATE", "CHANNEL", "CREATED", "REQUEST_ID", "AUTHOR", "TEXT")
	}
	for _, e := range entries {
		row(tw, e.ID, e.Type, entryState(e), cell(string(e.Channel), 0), e.CreatedAt.UTC().Format(time.RFC3339),
			cell(e.RequestID, 0), cell(e.Actor.Name, 24), cell(entryText(e), 48))
	}
	tw.Flush()
}

// printEntry writes one entry in full: its fields, then its body.
func printEntry(w io.Writer, e restarea.Entry) {
	tw := newTable(w)
	author := e.Actor.Name
	if e.Actor.Model != "" {
		author += " (" + e.Actor.Model + ")"
	}
	for _, kv := range [][2]string{
		{"id", e.ID}, {"type", e.Type}, {"state", entryState(e)}, {"parent_id", e.ParentID},
		{"request_id", e.RequestID}, {"channel", string(e.Channel)}, {"submission_mode", e.SubmissionMode},
		{"created_at", e.CreatedAt.UTC().Format(time.RFC3339Nano)}, {"author", author},
		{"trigger", e.Actor.Trigger}, {"by_operator", fmt.Sprint(e.ByOperator)},
		{"url", e.URL}, {"title", e.Title},
	} {
		row(tw, kv[0]+":", cell(kv[1], 0))
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%s\n", strings.TrimRight(clean(e.Body, true), "\n"))
}

// formatLimit writes a limit the way the flags take it: 30/m, 2000/h,
// 5/10s.
func formatLimit(l restarea.Limit) string {
	units := []struct {
		secs int
		name string
	}{{86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}}
	for _, u := range units {
		if l.WindowSeconds%u.secs == 0 {
			if n := l.WindowSeconds / u.secs; n != 1 {
				return fmt.Sprintf("%d/%d%s", l.Count, n, u.name)
			}
			return fmt.Sprintf("%d/%s", l.Count, u.name)
		}
	}
	return l.String()
}

// printSettings writes the settings as name and value.
func printSettings(w io.Writer, s restarea.Settings) {
	tw := newTable(w)
	row(tw, "writes_disabled:", fmt.Sprint(s.WritesDisabled))
	row(tw, "rate_per_source:", formatLimit(s.PerSourceLimit))
	row(tw, "rate_global:", formatLimit(s.GlobalLimit))
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
