package fsm

import (
	"encoding/json"
	"time"

	"github.com/restarea/restarea"
	bolt "go.etcd.io/bbolt"
)

// writesDisabledRetry is the Retry-After of 503 writes_disabled: an
// operator's switch has no known end, so clients poll gently.
const writesDisabledRetry = 30 * time.Second

// applyPost runs the checks of docs/contract.md §2 in their order: the
// per-source limit, the match against stored requests, admission, store.
func (f *FSM) applyPost(tx *bolt.Tx, index uint64, now int64, p *PostCommand) (*Result, error) {
	settings, err := getSettings(tx)
	if err != nil {
		return nil, err
	}

	// 1. Per-source limit: every attempt counts, replays included.
	var full time.Duration
	if !p.ByOperator {
		limit := settings.PerSourceLimit
		if wait, ok, err := admitSource(tx, p.Source, now, limit); err != nil {
			return nil, err
		} else if !ok {
			return rateLimited(wait, limit), nil
		}
		// Whether this attempt filled the window: the leader then looks
		// closely at the source's next post (node/precheck.go).
		key := sourceKey(p.Source)
		v, err := unseal(bSources, key, tx.Bucket(bSources).Get(key))
		if err != nil {
			return nil, err
		}
		if wait, ok := sourceVerdict(v, now, limit); !ok {
			full = wait
		}
	}
	res, err := f.admitPost(tx, index, now, p, settings)
	if res != nil {
		res.SourceFull = full
	}
	return res, err
}

// admitPost runs the checks of a post after the per-source limit: the
// match against stored requests, admission, store.
func (f *FSM) admitPost(tx *bolt.Tx, index uint64, now int64, p *PostCommand, settings storedSettings) (*Result, error) {
	req := &p.Request
	// Keys are converted once: bbolt copies a key it stores, so one []byte
	// serves every lookup and write of the same key.
	rid := []byte(req.RequestID)

	// 2. Match against stored requests.
	if v, err := get(tx, bTombs, rid); err != nil {
		return nil, err
	} else if v != nil {
		var t tombstone
		if err := json.Unmarshal(v, &t); err != nil {
			return nil, err
		}
		if string(t.ContentHash) == string(contentHash(req.Content())) {
			return refuse(restarea.CodeDeleted, 0, "the entry stored for this request_id was deleted by an operator; it is not re-created"), nil
		}
		return refuse(restarea.CodeConflict, 0, "request_id was used for different content; nothing was stored"), nil
	}
	seq, err := get(tx, bByRequest, rid)
	if err != nil {
		return nil, err
	}
	if seq != nil {
		r, err := recordAt(tx, seq)
		if err != nil {
			return nil, err
		}
		if r == nil {
			return nil, errMissing(req.RequestID)
		}
		if !restarea.SameContent(r.Content(), req.Content()) {
			return refuse(restarea.CodeConflict, 0, "request_id %s was already used for different content (%s); nothing was stored or changed — send the original content to replay it, or use a new request_id for a different post", req.RequestID, firstDifference(r.Content(), req.Content())), nil
		}
		if f.opts.Fault == FaultReplaysCreate && r.AttemptID != p.AttemptID {
			goto store // the deliberate bug: a replay stores a second entry
		}
		e := r.Entry
		if e.Visible, err = effectiveVisible(tx, r); err != nil {
			return nil, err
		}
		return &Result{Entry: &e, Replayed: r.AttemptID != p.AttemptID}, nil
	}

	// 3. Admission of a new entry.
	if !p.ByOperator {
		if settings.WritesDisabled {
			return refuse(restarea.CodeWritesDisabled, writesDisabledRetry, "new posts are disabled by the operators; retry later with the same request_id"), nil
		}
		if wait, ok, err := admitGlobal(tx, now, settings.GlobalLimit); err != nil {
			return nil, err
		} else if !ok {
			return refuse(restarea.CodeGlobalRateLimited, wait,
				"the site-wide limit of new entries (%d per %ds) is reached; retry after the delay with the same request_id",
				settings.GlobalLimit.Count, settings.GlobalLimit.WindowSeconds), nil
		}
	}
	if req.Type == restarea.TypeReply {
		if res, err := admitReply(tx, req.ParentID); res != nil || err != nil {
			return res, err
		}
	}

	// 4. Store.
store:
	r := &record{
		Entry: restarea.Entry{
			ID: p.NewID, RequestID: req.RequestID, Type: req.Type, ParentID: req.ParentID,
			Title: req.Title, Body: req.Body, Actor: req.Actor, SubmissionMode: req.SubmissionMode,
			Channel: p.Channel, CreatedAt: time.Unix(0, now).UTC(), Visible: true, ByOperator: p.ByOperator,
		},
		AttemptID: p.AttemptID,
		Seq:       index,
	}
	id := []byte(r.ID)
	if taken, err := get(tx, bIDs, id); err != nil {
		return nil, err
	} else if taken != nil {
		// A proposed id that collides (it never should with UUIDv4) must not
		// overwrite an entry; the client's retry gets a fresh id.
		return refuse(restarea.CodeUnavailable, 0, "entry id collision; retry with the same request_id"), nil
	}
	if f.opts.Fault == FaultForgetWrites {
		e := r.Entry
		return &Result{Entry: &e}, nil // the deliberate bug: acknowledged, never stored
	}
	if err := storeNew(tx, r, id, rid); err != nil {
		return nil, err
	}
	if !p.ByOperator {
		if err := recordGlobal(tx, now, index); err != nil {
			return nil, err
		}
	}
	// r is not used again: the result can point into it.
	return &Result{Entry: &r.Entry}, nil
}

// admitReply refuses a reply whose parent is not a public question; nil,
// nil admits it.
func admitReply(tx *bolt.Tx, parentID string) (*Result, error) {
	public, err := publicQuestion(tx, parentID)
	if public || err != nil {
		return nil, err
	}
	parent, err := getRecord(tx, parentID)
	if err != nil {
		return nil, err
	}
	switch {
	case parent == nil || !parent.Visible:
		return refuse(restarea.CodeParentNotFound, 0, "parent_id %s is not a public question", parentID), nil
	case parent.Type != restarea.TypeQuestion:
		return refuse(restarea.CodeInvalidParent, 0, "parent_id %s is a reply; replies answer questions", parentID), nil
	}
	return nil, nil
}

// storeNew stores a new record and indexes it; id and rid are r.ID and
// r.RequestID as bytes.
func storeNew(tx *bolt.Tx, r *record, id, rid []byte) error {
	version, err := readClusterVersion(tx)
	if err != nil {
		return err
	}
	on := version >= sumFromVersion
	if err := putRecord(tx, on, r); err != nil {
		return err
	}
	seq := u64(r.Seq)
	ids := tx.Bucket(bIDs)
	ids.FillPercent = 0.9 // leaders assign time-ordered ids: mostly appends
	if err := ids.Put(id, sealed(on, bIDs, id, seq)); err != nil {
		return err
	}
	if err := tx.Bucket(bByRequest).Put(rid, sealed(on, bByRequest, rid, seq)); err != nil {
		return err
	}
	expiry := tx.Bucket(bExpiry)
	expiry.FillPercent = 0.95
	if err := putMark(expiry, on, bExpiry, timeSeqKey(r.CreatedAt.UnixNano(), r.Seq)); err != nil {
		return err
	}
	if err := index(tx, on, r, true); err != nil {
		return err
	}
	if version >= fingerprintFromVersion {
		if err := putMark(tx.Bucket(bByBody), on, bByBody, bodyKey(r.Body, r.Seq)); err != nil {
			return err
		}
	}
	return addCounter(tx, on, kEntries, 1)
}

// index adds r to (or removes it from) the public listing it belongs to;
// on is sumOn of tx.
func index(tx *bolt.Tx, on bool, r *record, add bool) error {
	name, k := bReplies, replyKey(r.ParentID, r.Seq)
	if r.Type == restarea.TypeQuestion {
		name, k = bThreads, u64(r.Seq)
	}
	b := tx.Bucket(name)
	if !add {
		return b.Delete(k)
	}
	if r.Type == restarea.TypeQuestion {
		b.FillPercent = 0.95
	}
	return putMark(b, on, name, k)
}

// effectiveVisible is what a replay reports as visible: false when the
// entry is hidden, or when it is a reply whose question is not public.
func effectiveVisible(tx *bolt.Tx, r *record) (bool, error) {
	if !r.Visible {
		return false, nil
	}
	if r.Type == restarea.TypeReply {
		return publicQuestion(tx, r.ParentID)
	}
	return true, nil
}

// publicQuestion reports whether id is a stored, visible question: its
// sequence number is in the public listing (bThreads holds exactly those,
// see index). It reads two keys instead of decoding the question, whose
// body may be 20,000 characters, for every reply posted or replayed.
func publicQuestion(tx *bolt.Tx, id string) (bool, error) {
	seq, err := get(tx, bIDs, []byte(id))
	if seq == nil || err != nil {
		return false, err
	}
	return hasKey(tx, bThreads, seq)
}

func firstDifference(a, b restarea.Content) string {
	switch {
	case a.Type != b.Type:
		return "type differs"
	case a.ParentID != b.ParentID:
		return "parent_id differs"
	case a.Title != b.Title:
		return "title differs"
	case a.Body != b.Body:
		return "body differs"
	case a.Actor.Name != b.Actor.Name:
		return "actor.name differs"
	case a.Actor.Model != b.Actor.Model:
		return "actor.model differs"
	case a.Actor.Trigger != b.Actor.Trigger:
		return "actor.trigger differs"
	case a.SubmissionMode != b.SubmissionMode:
		return "submission_mode differs"
	}
	return "content differs"
}
