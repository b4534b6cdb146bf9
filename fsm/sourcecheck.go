package fsm

import (
	"time"

	"github.com/restarea/restarea"
	bolt "go.etcd.io/bbolt"
)

// rateLimited is the answer of a post refused by the per-source limit,
// whether the state machine decided it or a leader read it beforehand
// (SourceRefusal).
func rateLimited(wait time.Duration, limit restarea.Limit) *Result {
	return refuse(restarea.CodeRateLimited, wait,
		"too many post attempts from this source (limit %d per %ds); retry after the delay with the same request_id",
		limit.Count, limit.WindowSeconds)
}

// SourceRefusal is what the first check of a post (the per-source limit,
// docs/contract.md §2) would answer for a post from source stamped now,
// read from the state without applying anything: nil when the attempt
// would be admitted, or the very Result applyPost returns when it refuses
// (same code, message and delay). Like applyPost it uses the state's
// clock when that is later than now. It also returns the applied index of
// the state it read.
//
// With current false it reads the last committed state, which may lack
// the batches of an open group (group.go): a cheap first look. With
// current true it commits an open group first, so the answer reflects
// every applied batch unless the state file is stalled, in which case
// the index returned is older than AppliedIndex.
//
// A refusal here is certain for the command applied at the next index
// with time at most now: attempts only leave a source's window as time
// passes, so an earlier time finds at least as many; the caller must
// also know that no settings change is pending before it (node: a read
// barrier on the leader).
func (f *FSM) SourceRefusal(source string, now int64, current bool) (*Result, uint64, error) {
	var res *Result
	var index uint64
	read := func(tx *bolt.Tx) error {
		var err error
		if index, err = getU64(tx, bMeta, kApplied); err != nil {
			return err
		}
		clock, err := getU64(tx, bMeta, kClock)
		if err != nil {
			return err
		}
		now = max(now, int64(clock))
		settings, err := getSettings(tx)
		if err != nil {
			return err
		}
		limit := settings.PerSourceLimit
		key := sourceKey(source)
		v, err := unseal(bSources, key, tx.Bucket(bSources).Get(key))
		if err != nil {
			return err
		}
		if wait, ok := sourceVerdict(v, now, limit); !ok {
			res = rateLimited(wait, limit)
			res.Index = index
		}
		return nil
	}
	if current {
		return res, index, f.view(read)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.db == nil {
		return nil, 0, restarea.Errorf(restarea.CodeUnavailable, "node is shutting down")
	}
	return res, index, f.checked(f.db.View(read))
}
