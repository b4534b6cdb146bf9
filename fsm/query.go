package fsm

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/restarea/restarea"
	bolt "go.etcd.io/bbolt"
)

// Reads see the state as of the last applied batch (view commits an open
// group first, group.go; during a stall they see the last committed one).
// Public reads never
// return request_id, and never return hidden, deleted or expired entries,
// or replies of a question that is not public.

func (f *FSM) view(fn func(tx *bolt.Tx) error) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.db == nil {
		return restarea.Errorf(restarea.CodeUnavailable, "node is shutting down")
	}
	_ = f.commitForRead(false) // a failure is a stall: the read answers from the last committed state
	return f.checked(f.db.View(fn))
}

// checked is the end of every read outside the apply path: one that met
// damaged bytes stops the state machine, as applying would (corrupt.go),
// and its caller gets an error that says the node is unavailable instead
// of the bytes; clients retry on another node, which holds its own copy.
func (f *FSM) checked(err error) error {
	if !errors.Is(err, ErrCorrupt) {
		return err
	}
	f.halted(err)
	return restarea.Errorf(restarea.CodeUnavailable, "this node's copy of the data is damaged and it is stopping; retry on another node")
}

func notFound(what, id string) error {
	return restarea.Errorf(restarea.CodeNotFound, "no public %s has id %s", what, id)
}

func public(r *record) restarea.Entry {
	e := r.Entry
	e.RequestID = ""
	return e
}

// Thread returns a public question.
func (f *FSM) Thread(id string) (restarea.Entry, error) {
	var out restarea.Entry
	err := f.view(func(tx *bolt.Tx) error {
		r, err := getRecord(tx, id)
		if err != nil {
			return err
		}
		if r == nil || !r.Visible || r.Type != restarea.TypeQuestion {
			return notFound("question", id)
		}
		out = public(r)
		return nil
	})
	return out, err
}

// Reply returns a public reply of a public question.
func (f *FSM) Reply(id string) (restarea.Entry, error) {
	var out restarea.Entry
	err := f.view(func(tx *bolt.Tx) error {
		r, err := getRecord(tx, id)
		if err != nil {
			return err
		}
		if r == nil || r.Type != restarea.TypeReply {
			return notFound("reply", id)
		}
		if vis, err := effectiveVisible(tx, r); err != nil {
			return err
		} else if !vis {
			return notFound("reply", id)
		}
		out = public(r)
		return nil
	})
	return out, err
}

// Threads returns public questions, newest first.
func (f *FSM) Threads(cursor string, limit int) (restarea.ThreadPage, error) {
	page := restarea.ThreadPage{Threads: []restarea.Entry{}}
	after, limit, err := pageArgs(cursor, limit)
	if err != nil {
		return page, err
	}
	err = f.view(func(tx *bolt.Tx) error {
		page.NextCursor, err = walk(tx, bThreads, nil, after, limit, true, func(r *record) {
			page.Threads = append(page.Threads, public(r))
		})
		return err
	})
	return page, err
}

// Replies returns the public replies of a public question, oldest first
// (log order). A cursor names the last reply of the previous page, so
// replies that arrive meanwhile are neither skipped nor repeated.
func (f *FSM) Replies(threadID, cursor string, limit int) (restarea.ReplyPage, error) {
	return f.replies(threadID, cursor, limit, false)
}

// RepliesNewest is Replies newest first: a walk back from the thread's
// newest reply, so a reader of the newest few (a feed) reads those only,
// however long the thread. Its cursor continues newest first, with the
// replies older than the last one listed.
func (f *FSM) RepliesNewest(threadID, cursor string, limit int) (restarea.ReplyPage, error) {
	return f.replies(threadID, cursor, limit, true)
}

func (f *FSM) replies(threadID, cursor string, limit int, newestFirst bool) (restarea.ReplyPage, error) {
	page := restarea.ReplyPage{Replies: []restarea.Entry{}}
	after, limit, err := pageArgs(cursor, limit)
	if err != nil {
		return page, err
	}
	err = f.view(func(tx *bolt.Tx) error {
		q, err := getRecord(tx, threadID)
		if err != nil {
			return err
		}
		if q == nil || !q.Visible || q.Type != restarea.TypeQuestion {
			return notFound("question", threadID)
		}
		page.NextCursor, err = walk(tx, bReplies, []byte(threadID), after, limit, newestFirst, func(r *record) {
			page.Replies = append(page.Replies, public(r))
		})
		return err
	})
	return page, err
}

// Entries returns every stored entry, hidden ones included, with its
// request_id, newest first (for operators).
func (f *FSM) Entries(cursor string, limit int) (restarea.EntryPage, error) {
	page := restarea.EntryPage{Entries: []restarea.Entry{}}
	after, limit, err := pageArgs(cursor, limit)
	if err != nil {
		return page, err
	}
	err = f.view(func(tx *bolt.Tx) error {
		page.NextCursor, err = walk(tx, bEntries, nil, after, limit, true, func(r *record) {
			page.Entries = append(page.Entries, r.Entry)
		})
		return err
	})
	return page, err
}

// walk visits up to limit records of an index whose keys are prefix +
// sequence number (the entries bucket itself, or an index of it), newest
// first or oldest first, starting past the sequence number after in that
// direction (nil: from the newest, or the oldest, record of the prefix). It returns the cursor of the next page, or nil after the last.
// Positions are sequence numbers, not offsets, so entries added or
// removed meanwhile never make a page skip or repeat one.
//
// A page also ends before the record that would take its entry text past
// restarea.MaxPageBytes (but holds at least one record), so one read of
// large entries materialises about a megabyte, not limit times the
// largest entry; the cursor continues right after the last record visited.
func walk(tx *bolt.Tx, bucket, prefix, after []byte, limit int, newestFirst bool, visit func(*record)) (*string, error) {
	c := tx.Bucket(bucket).Cursor()
	k, v := seekPage(c, prefix, after, newestFirst)
	next := func() ([]byte, []byte) {
		if newestFirst {
			return c.Prev()
		}
		return c.Next()
	}
	n, size := 0, 0
	var lastSeq uint64
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = next() {
		if n == limit {
			return cursorString(lastSeq), nil
		}
		v, err := unseal(bucket, k, v)
		if err != nil {
			return nil, err
		}
		var r *record
		if string(bucket) == string(bEntries) {
			r, err = decodeRecord(v) // the value is the record
		} else {
			r, err = recordAt(tx, k[len(k)-8:])
		}
		if err != nil {
			return nil, err
		}
		if r == nil {
			return nil, errMissing(fmt.Sprintf("seq %d", readU64(k[len(k)-8:])))
		}
		if size += r.TextBytes(); n > 0 && size > restarea.MaxPageBytes {
			return cursorString(lastSeq), nil
		}
		visit(r)
		n++
		lastSeq = r.Seq
	}
	return nil, nil
}

// seekPage puts c on the first key of a page of keys that are prefix +
// sequence number: the newest (or oldest) key of the prefix when after is
// nil, else the first key past prefix + after in that direction. The key
// it returns may lie outside the prefix: the page is then empty.
func seekPage(c *bolt.Cursor, prefix, after []byte, newestFirst bool) (k, v []byte) {
	if !newestFirst {
		start := append(bytes.Clone(prefix), after...)
		k, v = c.Seek(start)
		if after != nil && bytes.Equal(k, start) {
			k, v = c.Next()
		}
		return k, v
	}
	// Start at the last key before the bound: the cursor's key, or the
	// end of the prefix's range. No key at or after the bound means the
	// last key of the bucket is the one.
	bound := append(bytes.Clone(prefix), after...)
	if after == nil {
		bound = prefixEnd(prefix)
	}
	if bound == nil {
		return c.Last()
	}
	if k, _ = c.Seek(bound); k == nil {
		return c.Last()
	}
	return c.Prev()
}

// prefixEnd returns the smallest key greater than every key that starts
// with prefix, or nil when there is none (an empty prefix, or one of 0xff
// bytes only).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Entry returns a stored entry as operators see it (hidden ones included,
// with request_id); found is false for unknown or deleted ids.
func (f *FSM) Entry(id string) (e restarea.Entry, found bool, err error) {
	err = f.view(func(tx *bolt.Tx) error {
		r, err := getRecord(tx, id)
		if err != nil || r == nil {
			return err
		}
		e, found = r.Entry, true
		return nil
	})
	return e, found, err
}

// Settings returns the settings in force, and whether any were ever
// stored (false means the built-in defaults apply).
func (f *FSM) Settings() (restarea.Settings, error) {
	var s restarea.Settings
	err := f.view(func(tx *bolt.Tx) error {
		stored, err := getSettings(tx)
		s = stored.Settings
		return err
	})
	return s, err
}

// Count returns the number of stored entries.
func (f *FSM) Count() (uint64, error) {
	var n uint64
	err := f.view(func(tx *bolt.Tx) error {
		var err error
		n, err = getU64(tx, bMeta, kEntries)
		return err
	})
	return n, err
}

func cursorString(seq uint64) *string {
	s := base64.RawURLEncoding.EncodeToString(u64(seq))
	return &s
}

// pageArgs checks a cursor and a limit. A cursor is the opaque encoding of
// the sequence number of the last entry of the previous page.
func pageArgs(cursor string, limit int) ([]byte, int, error) {
	switch {
	case limit == 0:
		limit = restarea.DefaultPageLimit
	case limit < 0 || limit > restarea.MaxPageLimit:
		return nil, 0, restarea.Errorf(restarea.CodeInvalidRequest, "limit must be between 1 and %d", restarea.MaxPageLimit)
	}
	if cursor == "" {
		return nil, limit, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(b) != 8 {
		return nil, 0, restarea.Errorf(restarea.CodeInvalidRequest, "cursor is not valid; pass next_cursor from a previous page")
	}
	return b, limit, nil
}
