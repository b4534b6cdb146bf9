package chaos

import (
	"testing"

	"github.com/restarea/restarea"
)

func kinds(vs []Violation) map[string]int {
	out := map[string]int{}
	for _, v := range vs {
		out[v.Kind]++
	}
	return out
}

func TestSummarizeFindsDuplicateCreates(t *testing.T) {
	_, vs := summarize([]Op{
		post(0, "r", "h", 0, 10, OutcomeCreated, "e1"),
		post(1, "r", "h", 0, 10, OutcomeCreated, "e2"),
		{Kind: OpPost, RequestID: "q", ContentHash: "h", Outcome: OutcomeUnexpected, Status: 400, Error: "invalid_request"},
	})
	k := kinds(vs)
	if k[VDuplicateCreate] != 1 || k[VDifferentIDs] != 1 || k[VUnexpected] != 1 {
		t.Fatalf("violations %v", vs)
	}
}

// checkState catches duplicates, losses, divergence and changed content.
func TestCheckState(t *testing.T) {
	content := restarea.Content{Type: restarea.TypeQuestion, Title: "t", Body: "b", Actor: restarea.Actor{Name: "a"}, SubmissionMode: restarea.ModeManual}
	h := ContentHash(content)
	entry := func(id, body string) restarea.Entry {
		e := restarea.Entry{ID: id, Type: content.Type, Title: content.Title, Body: body, Actor: content.Actor, SubmissionMode: content.SubmissionMode}
		return e
	}
	reqs, _ := summarize([]Op{
		post(0, "dup", h, 0, 10, OutcomeCreated, "e1"),
		post(0, "lost", h, 0, 10, OutcomeCreated, "e2"),
		post(0, "changed", h, 0, 10, OutcomeCreated, "e3"),
		{Kind: OpPost, RequestID: "changed", ContentHash: "other", Probe: true, Outcome: OutcomeConflict, Status: 409},
		post(0, "fine", h, 0, 10, OutcomeReplayed, "e4"),
	})
	states := []nodeEntries{
		{"dup": {entry("e1", "b"), entry("e9", "b")}, "changed": {entry("e3", "b (changed on purpose)")}, "fine": {entry("e4", "b")}, "lost": {entry("e2", "b")}},
		{"dup": {entry("e1", "b")}, "changed": {entry("e3", "b")}, "fine": {entry("e4", "b")}},
		nil, // unreadable node: skipped here, reported by the caller
	}
	k := kinds(checkState(reqs, states))
	want := map[string]int{VDuplicateStored: 1, VDiverged: 1, VLostWrite: 1, VContentChanged: 1}
	for kind, n := range want {
		if k[kind] != n {
			t.Errorf("%s: %d, want %d (all: %v)", kind, k[kind], n, k)
		}
	}
	if len(k) != len(want) {
		t.Errorf("unexpected kinds: %v", k)
	}
}

func TestScheduleIsRepeatable(t *testing.T) {
	classes := []string{ClassKill, ClassPause, ClassPartition}
	a := Schedule(7, 60e9, classes, 3)
	b := Schedule(7, 60e9, classes, 3)
	if len(a) < 4 || len(a) != len(b) {
		t.Fatalf("schedules of %d and %d faults", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("fault %d differs: %+v vs %+v", i, a[i], b[i])
		}
		if a[i].At+a[i].Hold > 60e9 {
			t.Fatalf("fault %d ends after the run: %+v", i, a[i])
		}
	}
	if c := Schedule(8, 60e9, classes, 3); len(c) == len(a) && c[0] == a[0] && c[1] == a[1] {
		t.Fatalf("another seed gave the same schedule")
	}
}
