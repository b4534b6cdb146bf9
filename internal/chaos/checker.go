package chaos

import (
	"fmt"
	"sort"
)

// Violation kinds: each names a promise of docs/contract.md §2, §3 or §8 that
// the run saw broken.
const (
	// A request_id got two 201 answers.
	VDuplicateCreate = "duplicate_create"
	// 201 and 200 answers for one request_id named different entries.
	VDifferentIDs = "different_ids"
	// A node stores more than one entry for a request_id.
	VDuplicateStored = "duplicate_stored"
	// An acknowledged request_id has no entry on a node.
	VLostWrite = "lost_write"
	// A node stores another entry than the one acknowledged.
	VWrongEntry = "wrong_entry"
	// The nodes disagree on the entry of a request_id.
	VDiverged = "diverged"
	// The stored content is not the original content (after a 409 probe,
	// this means the 409 changed what was stored).
	VContentChanged = "content_changed"
	// A replay with the original content was refused as a conflict, or a
	// replay with changed content was accepted.
	VWrongConflict = "wrong_conflict"
	// An acknowledged entry cannot be read from a node after settling.
	VUnreadable = "unreadable"
	// An answer the protocol does not allow (e.g. 400, 404 parent_not_found
	// for a confirmed parent, 201 with replayed: true).
	VUnexpected = "unexpected_answer"
	// The history of a request_id is not linearizable.
	VNotLinearizable = "not_linearizable"
	// A node's final state could not be read, or the cluster never
	// settled.
	VNoFinalState = "no_final_state"
)

// Violation is one broken promise.
type Violation struct {
	Kind      string `json:"kind"`
	RequestID string `json:"request_id,omitempty"`
	Node      *int   `json:"node,omitempty"`
	Detail    string `json:"detail"`
}

func violation(kind, rid string, node int, format string, args ...any) Violation {
	v := Violation{Kind: kind, RequestID: rid, Detail: fmt.Sprintf(format, args...)}
	if node >= 0 {
		v.Node = &node
	}
	return v
}

// ackedEntry is the entry a request_id was acknowledged with.
type ackedEntry struct {
	id, typ string
}

// request is everything the history says about one request_id.
type request struct {
	rid     string
	hash    string // the original content
	typ     string
	creates int
	ids     map[string]bool
	first   string
	probed  bool
}

// summarize groups the posts of ops by request_id and reports the
// violations that the answers alone show.
func summarize(ops []Op) (map[string]*request, []Violation) {
	reqs := map[string]*request{}
	var vs []Violation
	for _, op := range ops {
		if op.Outcome == OutcomeUnexpected {
			vs = append(vs, violation(VUnexpected, op.RequestID, op.Node, "%s over %s: status %d: %s", op.Kind, op.Channel, op.Status, op.Error))
		}
		if op.Kind != OpPost {
			continue
		}
		r := reqs[op.RequestID]
		if r == nil {
			r = &request{rid: op.RequestID, ids: map[string]bool{}}
			reqs[op.RequestID] = r
		}
		if op.Probe {
			r.probed = true
			if op.Outcome == OutcomeCreated || op.Outcome == OutcomeReplayed {
				vs = append(vs, violation(VWrongConflict, op.RequestID, op.Node, "a replay with changed content was accepted (%s, entry %s)", op.Outcome, op.EntryID))
			}
			continue
		}
		r.hash, r.typ = op.ContentHash, op.Type
		switch op.Outcome {
		case OutcomeCreated:
			r.creates++
			fallthrough
		case OutcomeReplayed:
			if r.first == "" {
				r.first = op.EntryID
			}
			r.ids[op.EntryID] = true
		case OutcomeConflict:
			vs = append(vs, violation(VWrongConflict, op.RequestID, op.Node, "a replay with the original content got 409 conflict"))
		}
	}
	for _, r := range sortedRequests(reqs) {
		if r.creates > 1 {
			vs = append(vs, violation(VDuplicateCreate, r.rid, -1, "%d answers 201 for one request_id", r.creates))
		}
		if len(r.ids) > 1 {
			vs = append(vs, violation(VDifferentIDs, r.rid, -1, "answers named %d different entries: %v", len(r.ids), keys(r.ids)))
		}
	}
	return reqs, vs
}

// acked returns the acknowledged request_ids and their entries.
func acked(reqs map[string]*request) map[string]ackedEntry {
	out := map[string]ackedEntry{}
	for rid, r := range reqs {
		if r.first != "" {
			out[rid] = ackedEntry{id: r.first, typ: r.typ}
		}
	}
	return out
}

// checkState compares what each node stores with the history. states[i]
// is nil when node i's state could not be read.
func checkState(reqs map[string]*request, states []nodeEntries) []Violation {
	var vs []Violation
	for _, r := range sortedRequests(reqs) {
		seen := map[string]bool{}
		for i, st := range states {
			if st == nil {
				continue
			}
			es := st[r.rid]
			switch {
			case len(es) > 1:
				vs = append(vs, violation(VDuplicateStored, r.rid, i, "%d entries stored for one request_id", len(es)))
			case len(es) == 0 && r.first != "":
				vs = append(vs, violation(VLostWrite, r.rid, i, "acknowledged entry %s is not stored", r.first))
			case len(es) == 1 && r.first != "" && es[0].ID != r.first:
				vs = append(vs, violation(VWrongEntry, r.rid, i, "stores entry %s, acknowledged %s", es[0].ID, r.first))
			}
			for _, e := range es {
				seen[e.ID] = true
				if h := ContentHash(e.Content()); r.hash != "" && h != r.hash {
					what := "stored content differs from the content posted"
					if r.probed {
						what = "a 409 changed what was stored"
					}
					vs = append(vs, violation(VContentChanged, r.rid, i, "%s (entry %s)", what, e.ID))
				}
			}
		}
		if len(seen) > 1 {
			vs = append(vs, violation(VDiverged, r.rid, -1, "nodes store different entries: %v", keys(seen)))
		}
	}
	return vs
}

// checkReadable turns failed public reads into violations.
func checkReadable(missing []readable) []Violation {
	var vs []Violation
	for _, m := range missing {
		vs = append(vs, violation(VUnreadable, m.rid, m.node, "entry %s: %s %s", m.id, m.outcome, m.err))
	}
	return vs
}

func sortedRequests(reqs map[string]*request) []*request {
	out := make([]*request, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rid < out[j].rid })
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
