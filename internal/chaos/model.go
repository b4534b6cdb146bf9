package chaos

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// modelState is what one request_id maps to. ID is empty while a post of
// unknown outcome is assumed to have created the entry and no answer has
// told its id yet.
type modelState struct {
	Stored bool
	ID     string
	Hash   string
}

// modelInput is a call: a post of content Hash, or a strong read of
// entry EntryID.
type modelInput struct {
	Kind    string
	Hash    string
	EntryID string
}

// modelOutput is what the call learned; Outcome "" means unknown.
type modelOutput struct {
	Outcome string
	EntryID string
}

// postStep is the specification of docs/contract.md §2 for one request_id.
func postStep(s modelState, in modelInput, out modelOutput) (bool, modelState) {
	switch out.Outcome {
	case OutcomeCreated:
		if s.Stored {
			return false, s
		}
		return true, modelState{Stored: true, ID: out.EntryID, Hash: in.Hash}
	case OutcomeReplayed:
		if !s.Stored || s.Hash != in.Hash || (s.ID != "" && s.ID != out.EntryID) {
			return false, s
		}
		s.ID = out.EntryID
		return true, s
	case OutcomeConflict:
		return s.Stored && s.Hash != in.Hash, s
	}
	// Unknown outcome: applied here, or (linearised after everything,
	// which its endless return time allows) never.
	if !s.Stored {
		return true, modelState{Stored: true, Hash: in.Hash}
	}
	return true, s
}

// readStep is a linearizable read of one entry id.
func readStep(s modelState, in modelInput, out modelOutput) (bool, modelState) {
	switch out.Outcome {
	case OutcomeFound:
		if !s.Stored || (s.ID != "" && s.ID != in.EntryID) {
			return false, s
		}
		s.ID = in.EntryID
		return true, s
	case OutcomeNotFound:
		return !s.Stored || (s.ID != "" && s.ID != in.EntryID), s
	}
	return true, s
}

// Model is the porcupine model of the board as a map request_id → entry,
// partitioned by request_id. Operation inputs and outputs must come from
// PorcupineOps.
var Model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Metadata.(opInfo).rid
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return modelState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		s, in, out := state.(modelState), input.(modelInput), output.(modelOutput)
		if in.Kind == OpRead {
			return readStep(s, in, out)
		}
		return postStep(s, in, out)
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(modelInput), output.(modelOutput)
		res := out.Outcome
		if res == "" {
			res = "unknown"
		}
		if in.Kind == OpRead {
			return fmt.Sprintf("read(%s) → %s", short(in.EntryID), res)
		}
		if out.EntryID != "" {
			res += " " + short(out.EntryID)
		}
		return fmt.Sprintf("post(%s) → %s", short(in.Hash), res)
	},
	DescribeState: func(state interface{}) string {
		s := state.(modelState)
		if !s.Stored {
			return "nothing stored"
		}
		id := s.ID
		if id == "" {
			id = "?"
		}
		return fmt.Sprintf("entry %s, content %s", short(id), short(s.Hash))
	},
	DescribeOperationMetadata: func(info interface{}) string {
		i := info.(opInfo)
		return fmt.Sprintf("request_id %s, node %d over %s, status %d", i.rid, i.node, i.channel, i.status)
	},
}

func short(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

// opInfo is the metadata of a porcupine operation.
type opInfo struct {
	rid     string
	node    int
	channel string
	status  int
}

// PorcupineOps turns a history into porcupine operations: every post,
// with unknown outcomes given an endless return time so they count as
// possibly applied at any point after their call; and strong reads with a
// definite answer. Local reads are left out: they are not linearizable by
// design (docs/contract.md §3).
func PorcupineOps(ops []Op) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range ops {
		in := modelInput{Kind: op.Kind, Hash: op.ContentHash, EntryID: op.EntryID}
		res := modelOutput{}
		ret := op.ReturnNs
		switch {
		case op.Kind == OpRead && (!op.Strong || !Known(op.Outcome)):
			continue
		case op.Kind == OpRead:
			res.Outcome = op.Outcome
		case Known(op.Outcome):
			res = modelOutput{Outcome: op.Outcome, EntryID: op.EntryID}
			if op.Outcome == OutcomeConflict {
				res.EntryID = ""
			}
		default:
			ret = math.MaxInt64
		}
		out = append(out, porcupine.Operation{
			ClientId: op.Client, Input: in, Call: op.CallNs, Output: res, Return: ret,
			Metadata: opInfo{rid: op.RequestID, node: op.Node, channel: op.Channel, status: op.Status},
		})
	}
	return out
}

// linearizability checks each request_id's operations on its own (so the
// failing ones are known) within an overall time budget. It returns the
// request_ids whose history is not linearizable and whether every
// partition was decided.
func linearizability(ops []porcupine.Operation, budget time.Duration) (illegal []string, complete bool) {
	deadline := time.Now().Add(budget)
	complete = true
	for _, part := range Model.Partition(ops) {
		left := time.Until(deadline)
		if left <= 0 {
			return illegal, false
		}
		single := Model
		single.Partition = nil
		switch porcupine.CheckOperationsTimeout(single, withoutDuplicateUnknowns(part), min(left, 10*time.Second)) {
		case porcupine.Illegal:
			illegal = append(illegal, part[0].Metadata.(opInfo).rid)
		case porcupine.Unknown:
			complete = false
		}
	}
	return illegal, complete
}

// withoutDuplicateUnknowns keeps, of the posts of unknown outcome with
// the same request_id and content, only the first called.
// The rest cannot change what is decided: each may take effect at any
// point after its call (its return is endless), and it stores its content
// only where nothing is stored, which the first called one can do at the
// same point; anywhere else it does nothing. So the history is
// linearizable exactly when the reduced one is. Without this, the dozens
// of timed-out retries of one request_id while every node is cut make
// porcupine try an exponential number of orders (a 120 s run left 13
// request_ids of about 40 unknown retries each undecided after 10 s each;
// reduced, each is decided at once).
func withoutDuplicateUnknowns(part []porcupine.Operation) []porcupine.Operation {
	type key struct{ rid, hash string }
	first := map[key]int{} // index in out of the first unknown post of a content
	out := make([]porcupine.Operation, 0, len(part))
	for _, op := range part {
		in := op.Input.(modelInput)
		if in.Kind == OpRead || op.Output.(modelOutput).Outcome != "" {
			out = append(out, op)
			continue
		}
		k := key{op.Metadata.(opInfo).rid, in.Hash}
		if i, ok := first[k]; ok {
			if op.Call < out[i].Call {
				out[i] = op
			}
			continue
		}
		first[k] = len(out)
		out = append(out, op)
	}
	return out
}

// visualize writes porcupine's HTML visualisation of the operations of
// the given request_ids to path.
func visualize(ops []porcupine.Operation, rids map[string]bool, path string) error {
	var sel []porcupine.Operation
	for _, op := range ops {
		if rids[op.Metadata.(opInfo).rid] {
			sel = append(sel, op)
		}
	}
	_, info := porcupine.CheckOperationsVerbose(Model, withoutDuplicateUnknowns(sel), time.Minute)
	return porcupine.VisualizePath(Model, info, path)
}
