package chaos

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"
)

func post(client int, rid, hash string, call, ret int64, outcome, id string) Op {
	return Op{Client: client, Kind: OpPost, RequestID: rid, ContentHash: hash, CallNs: call, ReturnNs: ret, Outcome: outcome, EntryID: id, Status: 1}
}

func strongRead(client int, rid, id string, call, ret int64, outcome string) Op {
	return Op{Client: client, Kind: OpRead, RequestID: rid, EntryID: id, Strong: true, CallNs: call, ReturnNs: ret, Outcome: outcome, Status: 1}
}

// The model accepts what docs/contract.md §2 allows and refuses the rest.
func TestModel(t *testing.T) {
	cases := []struct {
		name  string
		ops   []Op
		legal bool
	}{
		{"one create, concurrent replay", []Op{
			post(0, "r", "h", 0, 10, OutcomeCreated, "e1"),
			post(1, "r", "h", 1, 9, OutcomeReplayed, "e1"),
		}, true},
		{"two creates", []Op{
			post(0, "r", "h", 0, 10, OutcomeCreated, "e1"),
			post(1, "r", "h", 1, 9, OutcomeCreated, "e2"),
		}, false},
		{"replay names another entry", []Op{
			post(0, "r", "h", 0, 10, OutcomeCreated, "e1"),
			post(1, "r", "h", 20, 30, OutcomeReplayed, "e2"),
		}, false},
		{"timeout then replay: the lost call created it", []Op{
			post(0, "r", "h", 0, 10, OutcomeTimeout, ""),
			post(1, "r", "h", 20, 30, OutcomeReplayed, "e1"),
		}, true},
		{"503 then create: the lost call did nothing", []Op{
			post(0, "r", "h", 0, 10, OutcomeUnavailable, ""),
			post(1, "r", "h", 20, 30, OutcomeCreated, "e1"),
		}, true},
		{"replay before anything was stored", []Op{
			post(0, "r", "h", 0, 10, OutcomeReplayed, "e1"),
			post(1, "r", "h", 20, 30, OutcomeCreated, "e1"),
		}, false},
		{"409 for changed content", []Op{
			post(0, "r", "h", 0, 10, OutcomeCreated, "e1"),
			post(1, "r", "x", 20, 30, OutcomeConflict, ""),
			post(1, "r", "h", 40, 50, OutcomeReplayed, "e1"),
		}, true},
		{"409 for the same content", []Op{
			post(0, "r", "h", 0, 10, OutcomeCreated, "e1"),
			post(1, "r", "h", 20, 30, OutcomeConflict, ""),
		}, false},
		{"409 changed what was stored", []Op{
			post(0, "r", "h", 0, 10, OutcomeCreated, "e1"),
			post(1, "r", "x", 20, 30, OutcomeConflict, ""),
			post(1, "r", "x", 40, 50, OutcomeReplayed, "e1"),
		}, false},
		{"strong read after the ack finds it", []Op{
			post(0, "r", "h", 0, 10, OutcomeCreated, "e1"),
			strongRead(1, "r", "e1", 20, 30, OutcomeFound),
		}, true},
		{"strong read after the ack misses it", []Op{
			post(0, "r", "h", 0, 10, OutcomeCreated, "e1"),
			strongRead(1, "r", "e1", 20, 30, OutcomeNotFound),
		}, false},
		{"local read may be stale", []Op{
			post(0, "r", "h", 0, 10, OutcomeCreated, "e1"),
			{Kind: OpRead, RequestID: "r", EntryID: "e1", CallNs: 20, ReturnNs: 30, Outcome: OutcomeNotFound},
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := porcupine.CheckOperations(Model, PorcupineOps(c.ops))
			if got != c.legal {
				t.Fatalf("linearizable = %v, want %v", got, c.legal)
			}
		})
	}
}

// Unknown outcomes get an endless return time, so porcupine may place
// them anywhere after their call.
func TestPorcupineOpsUnknownNeverReturns(t *testing.T) {
	pops := PorcupineOps([]Op{post(0, "r", "h", 5, 10, OutcomeTimeout, "")})
	if len(pops) != 1 || pops[0].Return != math.MaxInt64 {
		t.Fatalf("unknown post: %+v", pops)
	}
}

// linearizability names the request_ids whose history is illegal.
func TestLinearizabilityNamesTheBadRequest(t *testing.T) {
	ops := []Op{
		post(0, "good", "h", 0, 10, OutcomeCreated, "e1"),
		post(1, "good", "h", 1, 11, OutcomeReplayed, "e1"),
		post(2, "bad", "h", 0, 10, OutcomeCreated, "e2"),
		post(3, "bad", "h", 20, 30, OutcomeCreated, "e3"),
	}
	illegal, complete := linearizability(PorcupineOps(ops), 10e9)
	if !complete || len(illegal) != 1 || illegal[0] != "bad" {
		t.Fatalf("illegal %v complete %v", illegal, complete)
	}
}

// Dozens of timed-out retries of one request_id (every node cut at once)
// are decided at once, legal or not: of the unknown posts of one content
// only the first called counts.
func TestLinearizabilityDecidesManyUnknownRetries(t *testing.T) {
	history := func(rid, replayID string) []Op {
		var ops []Op
		for i := range 60 {
			hash := "h"
			if i%10 == 9 {
				hash = "other"
			}
			ops = append(ops, post(i, rid, hash, int64(i), int64(i)+5, OutcomeTimeout, ""))
		}
		return append(ops,
			post(60, rid, "h", 100, 110, OutcomeCreated, "e1"),
			post(61, rid, "other", 120, 130, OutcomeConflict, ""),
			post(62, rid, "h", 140, 150, OutcomeReplayed, replayID))
	}
	ops := append(history("legal", "e1"), history("doubled", "e2")...)
	illegal, complete := linearizability(PorcupineOps(ops), 10e9)
	if !complete || len(illegal) != 1 || illegal[0] != "doubled" {
		t.Fatalf("illegal %v complete %v, want just doubled, decided", illegal, complete)
	}
	if got := len(withoutDuplicateUnknowns(PorcupineOps(history("r", "e1")))); got != 5 {
		t.Fatalf("reduced to %d operations, want 5 (one unknown post of each content and the three answers)", got)
	}
}
