package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the result of a run. Its JSON form is what --report writes.
type Report struct {
	Target   string `json:"target"`
	Seed     int64  `json:"seed"`
	Workers  int    `json:"workers"`
	Duration string `json:"duration"`
	Elapsed  string `json:"elapsed"`
	// Ops counts every call; Posts and Reads count calls by outcome.
	Ops   int            `json:"ops"`
	Posts map[string]int `json:"posts"`
	Reads map[string]int `json:"reads"`
	// Requests counts distinct request_ids posted; Acknowledged those
	// that got a 201 or 200; Stored the entries the nodes hold for them.
	Requests     int `json:"requests"`
	Acknowledged int `json:"acknowledged"`
	Stored       int `json:"stored"`
	// Faults are the faults injected, in order.
	Faults        []FaultRecord `json:"faults"`
	LeaderChanges int           `json:"leader_changes"`
	// LeaderTerms counts the terms in which some node was seen claiming
	// leadership (each node's /api/v1/cluster, polled every 250ms); two
	// claimants in one term are a two_leaders violation.
	LeaderTerms int `json:"leader_terms"`
	// Members are the member ids the healed cluster must list, when the
	// run changed members (checked on every node).
	Members []string `json:"members,omitempty"`
	// Upgrade is the rolling upgrade's steps and outcome, when the run
	// made one (Config.Upgrade).
	Upgrade *UpgradeReport `json:"upgrade,omitempty"`
	// Latencies of calls that got an answer, in milliseconds.
	PostP50Ms float64 `json:"post_latency_p50_ms"`
	PostP99Ms float64 `json:"post_latency_p99_ms"`
	ReadP50Ms float64 `json:"read_latency_p50_ms"`
	ReadP99Ms float64 `json:"read_latency_p99_ms"`
	// WriteUnavailableMs is the longest time during which no post
	// succeeded, as the clients saw it; WriteUnavailableAt is when that
	// gap began, from the start of the run.
	WriteUnavailableMs float64 `json:"write_unavailable_ms"`
	WriteUnavailableAt string  `json:"write_unavailable_at"`
	// Linearizable is "yes", "no", or "unknown" when porcupine ran out of
	// time on some request_id.
	Linearizable string      `json:"linearizable"`
	Violations   []Violation `json:"violations"`
	// HistoryFile and VisualizationFile are written when there are
	// violations (the history also when asked for).
	HistoryFile       string `json:"history_file,omitempty"`
	VisualizationFile string `json:"visualization_file,omitempty"`
}

// OK reports whether the run found no violation.
func (r *Report) OK() bool { return len(r.Violations) == 0 }

// tally fills the counts and latencies from ops.
func (r *Report) tally(ops []Op) {
	r.Ops = len(ops)
	r.Posts, r.Reads = map[string]int{}, map[string]int{}
	var postLat, readLat []time.Duration
	for _, op := range ops {
		answered := op.Status != 0
		if op.Kind == OpPost {
			r.Posts[op.Outcome]++
			if answered {
				postLat = append(postLat, op.Latency())
			}
			continue
		}
		key := op.Outcome
		if op.Strong {
			key = "strong_" + key
		}
		r.Reads[key]++
		if answered {
			readLat = append(readLat, op.Latency())
		}
	}
	r.PostP50Ms, r.PostP99Ms = percentile(postLat, 50), percentile(postLat, 99)
	r.ReadP50Ms, r.ReadP99Ms = percentile(readLat, 50), percentile(readLat, 99)
	gap, at := writeGap(ops)
	r.WriteUnavailableMs = float64(gap.Microseconds()) / 1000
	r.WriteUnavailableAt = at.Round(time.Millisecond).String()
}

func percentile(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	i := (len(ds)*p + 99) / 100
	i = min(max(i-1, 0), len(ds)-1)
	return float64(ds[i].Microseconds()) / 1000
}

// WriteJSON writes the report as indented JSON to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// postRows are the post outcomes in table order, with their HTTP names.
var postRows = []struct{ outcome, label string }{
	{OutcomeCreated, "201 created"},
	{OutcomeReplayed, "200 replayed"},
	{OutcomeConflict, "409 conflict"},
	{OutcomeRateLimited, "429 rate limited"},
	{OutcomeUnavailable, "503 unavailable"},
	{OutcomeTimeout, "timeout (abandoned)"},
	{OutcomeFailed, "connection error / 5xx"},
	{OutcomeUnexpected, "unexpected"},
}

// Print writes the report as a table.
func (r *Report) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "chaos run\t%s, seed %d, %d workers, %s (planned %s)\n", r.Target, r.Seed, r.Workers, r.Elapsed, r.Duration)
	fmt.Fprintf(tw, "operations\t%d (%d requests, %d acknowledged, %d stored)\n", r.Ops, r.Requests, r.Acknowledged, r.Stored)
	for _, row := range postRows {
		fmt.Fprintf(tw, "  post %s\t%d\n", row.label, r.Posts[row.outcome])
	}
	for _, k := range sortedKeys(r.Reads) {
		fmt.Fprintf(tw, "  read %s\t%d\n", strings.ReplaceAll(k, "_", " "), r.Reads[k])
	}
	fmt.Fprintf(tw, "latency post\tp50 %.1fms  p99 %.1fms\n", r.PostP50Ms, r.PostP99Ms)
	fmt.Fprintf(tw, "latency read\tp50 %.1fms  p99 %.1fms\n", r.ReadP50Ms, r.ReadP99Ms)
	fmt.Fprintf(tw, "write unavailability\tlongest %.0fms without a successful post (from %s)\n", r.WriteUnavailableMs, r.WriteUnavailableAt)
	kinds := map[string]int{}
	for _, f := range r.Faults {
		kinds[f.Kind]++
	}
	fmt.Fprintf(tw, "faults\t%d%s\n", len(r.Faults), formatCounts(kinds))
	failed := 0
	for _, f := range r.Faults {
		if f.Error != "" {
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(tw, "faults with errors\t%d (see the JSON report)\n", failed)
	}
	fmt.Fprintf(tw, "leader changes\t%d (%d terms with a leader seen)\n", r.LeaderChanges, r.LeaderTerms)
	if r.Members != nil {
		fmt.Fprintf(tw, "members after healing\t%s\n", strings.Join(r.Members, " "))
	}
	if r.Upgrade != nil {
		r.Upgrade.print(tw)
	}
	fmt.Fprintf(tw, "linearizable\t%s\n", r.Linearizable)
	byKind := map[string]int{}
	for _, v := range r.Violations {
		byKind[v.Kind]++
	}
	fmt.Fprintf(tw, "violations\t%d%s\n", len(r.Violations), formatCounts(byKind))
	tw.Flush()
	for i, v := range r.Violations {
		if i == 20 {
			fmt.Fprintf(w, "  … %d more in the JSON report\n", len(r.Violations)-i)
			break
		}
		node := ""
		if v.Node != nil {
			node = fmt.Sprintf(" node %d", *v.Node)
		}
		fmt.Fprintf(w, "  %s %s%s: %s\n", v.Kind, v.RequestID, node, v.Detail)
	}
	if r.HistoryFile != "" {
		fmt.Fprintf(w, "history: %s\n", r.HistoryFile)
	}
	if r.VisualizationFile != "" {
		fmt.Fprintf(w, "visualisation: %s\n", r.VisualizationFile)
	}
}

func formatCounts(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writeGap returns the longest time during which no post succeeded (a
// 201, or a 200 confirming a retried post), as the clients saw it: the
// longest span between the answers of two successive successful posts,
// counting from the first call of the run and up to the last call that
// started (so that writes that never came back count to the end). It
// also returns when the gap began.
func writeGap(ops []Op) (gap, at time.Duration) {
	if len(ops) == 0 {
		return 0, 0
	}
	first, last := ops[0].CallNs, ops[0].CallNs
	var ok []int64
	for _, op := range ops {
		first, last = min(first, op.CallNs), max(last, op.CallNs)
		if op.Kind == OpPost && (op.Outcome == OutcomeCreated || op.Outcome == OutcomeReplayed) {
			ok = append(ok, op.ReturnNs)
		}
	}
	sort.Slice(ok, func(i, j int) bool { return ok[i] < ok[j] })
	prev := first
	for _, t := range append(ok, last) {
		if d := time.Duration(t - prev); d > gap {
			gap, at = d, time.Duration(prev)
		}
		prev = max(prev, t)
	}
	return gap, at
}
