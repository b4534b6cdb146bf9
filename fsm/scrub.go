package fsm

import (
	"bytes"
	"context"
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A scrub reads every value of the state file and checks its checksum,
// so that damage in a record nobody reads (an old question, an index
// entry, a tombstone) is found too, before a snapshot carries it or the
// node serves it. It reads committed state only, in short read
// transactions, so it never holds up applying or a snapshot restore.
const (
	scrubKeysPerTx  = 1024      // values read per read transaction, at most
	scrubBytesPerTx = 256 << 10 // bytes read per read transaction, about
)

// ScrubOptions tune Scrub.
type ScrubOptions struct {
	// Rate bounds the bytes (keys and values) read per second; it must be
	// positive.
	Rate int64
	// Every is the least time from the start of one pass to the start of
	// the next; a pass that takes longer is followed at once.
	Every time.Duration
	// Checked, when set, is told after each read transaction how many
	// values with a checksum it checked.
	Checked func(n int)
	// Passed, when set, is told of each completed pass.
	Passed func(ScrubPass)
}

// ScrubPass describes a completed pass over the whole state file.
type ScrubPass struct {
	// Checked counts the values whose checksum matched; Bare those
	// written before cluster version 3, which carry none.
	Checked, Bare int
	// Bytes is what the pass read (keys and values).
	Bytes int64
	// Took is how long the pass lasted; End when it ended.
	Took time.Duration
	End  time.Time
}

// Scrub walks the whole state file again and again, at most Rate bytes
// per second and one pass per Every, until ctx is done (it then returns
// ctx.Err()), the FSM is closed or stopped (nil), or it meets a value
// whose checksum does not match: it then stops the state machine as a read
// would (Options.OnHalt is told) and returns the *CorruptError.
func (f *FSM) Scrub(ctx context.Context, o ScrubOptions) error {
	if o.Rate <= 0 {
		return errors.New("fsm: scrub: the rate must be positive")
	}
	for {
		start := time.Now()
		f.log.Debug("fsm: scrub pass started")
		pass, err := f.scrubPass(ctx, o)
		if err != nil || pass == nil {
			return err
		}
		pass.End = time.Now()
		pass.Took = pass.End.Sub(start)
		f.log.Info("fsm: scrub pass completed", "checked", pass.Checked, "bare", pass.Bare,
			"bytes", pass.Bytes, "took", pass.Took.Round(time.Millisecond).String())
		if o.Passed != nil {
			o.Passed(*pass)
		}
		if err := sleepCtx(ctx, time.Until(start.Add(o.Every))); err != nil {
			return err
		}
	}
}

// scrubPass is one pass over every bucket; nil, nil when the FSM closed
// or stopped meanwhile.
func (f *FSM) scrubPass(ctx context.Context, o ScrubOptions) (*ScrubPass, error) {
	var pass ScrubPass
	for _, bucket := range allBuckets {
		var from []byte
		for {
			if f.Halted() != nil {
				return nil, nil
			}
			c, err := f.scrubChunk(bucket, from)
			switch {
			case errors.Is(err, errClosed):
				return nil, nil
			case errors.Is(err, errNoStateFile):
				// A failed restore left no file open yet: the next apply
				// opens it. Try the same place again in a while.
				if err := sleepCtx(ctx, time.Second); err != nil {
					return nil, err
				}
				continue
			case err != nil:
				if errors.Is(err, ErrCorrupt) {
					f.halted(err)
				}
				return nil, err
			}
			pass.Checked += c.checked
			pass.Bare += c.bare
			pass.Bytes += c.bytes
			if o.Checked != nil && c.checked > 0 {
				o.Checked(c.checked)
			}
			if err := sleepCtx(ctx, time.Duration(float64(c.bytes)/float64(o.Rate)*float64(time.Second))); err != nil {
				return nil, err
			}
			if c.next == nil {
				break
			}
			from = c.next
		}
	}
	return &pass, nil
}

// scrubbed is what one read transaction of a scrub found.
type scrubbed struct {
	next          []byte // the first key not read yet, nil at the end of the bucket
	checked, bare int
	bytes         int64
}

// scrubChunk checks the values of bucket from the key from on (nil: from
// the first), in one read transaction.
func (f *FSM) scrubChunk(bucket, from []byte) (scrubbed, error) {
	var c scrubbed
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.db == nil {
		if f.closed {
			return c, errClosed
		}
		return c, errNoStateFile
	}
	err := f.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil {
			return nil
		}
		cur := b.Cursor()
		k, v := cur.First()
		if from != nil {
			k, v = cur.Seek(from)
		}
		for n := 0; k != nil; k, v = cur.Next() {
			if n == scrubKeysPerTx || c.bytes >= scrubBytesPerTx {
				c.next = bytes.Clone(k) // k lives only as long as tx
				return nil
			}
			sealed, err := checkStored(tx, bucket, k, v)
			if err != nil {
				return err
			}
			if sealed {
				c.checked++
			} else {
				c.bare++
			}
			c.bytes += int64(len(k) + len(v))
			n++
		}
		return nil
	})
	return c, err
}

// checkStored checks one stored value as every read of it would, and
// reports whether it carries a checksum.
func checkStored(tx *bolt.Tx, bucket, k, v []byte) (bool, error) {
	if string(bucket) == string(bMeta) {
		switch string(k) {
		case string(kLineage):
			_, err := readLineage(tx)
			return len(v) == sumHeader+2*LineageSize, err
		case string(kPruneFrom):
			on, err := sumOn(tx)
			if err != nil || !on {
				return false, err
			}
		}
	}
	if _, err := unseal(bucket, k, v); err != nil {
		return false, err
	}
	return isSealed(v), nil
}

// sleepCtx waits d, or until ctx is done (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
