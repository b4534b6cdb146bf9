package powerfs

import (
	"fmt"
	"io"
	"os"
)

// pageSize is the unit in which unsynced data is kept, like a page cache.
const pageSize = 4096

// fileData is one regular file's contents: what its last fsync put in the
// backing data file, and, in memory, every write and truncate since.
//
// Invariant: floor <= size and floor <= blen. Bytes below floor that are
// not in a dirty page come from the backing file; every other byte that is
// not in a dirty page is zero (a truncate down lowers floor, so the bytes
// it cut off read as zero when the file grows again). A dirty page holds
// zeros beyond size.
type fileData struct {
	size  int64            // the file's size as the running system sees it
	blen  int64            // length of the backing data file
	floor int64            // backing bytes below this are still the file's
	pages map[int64][]byte // dirty pages by index
	trunc bool             // a truncate is pending
	path  string           // the backing data file
	back  *os.File         // the backing data file, opened lazily; nil if none
	have  bool             // the backing data file exists
}

// dirty reports whether anything is pending for this file.
func (d *fileData) dirty() bool { return len(d.pages) > 0 || d.trunc }

// pendingBytes is how much unsynced data the file holds in memory.
func (d *fileData) pendingBytes() int64 { return int64(len(d.pages)) * pageSize }

// base fills p with the synced contents at off (zeros past floor).
func (d *fileData) base(p []byte, off int64) error {
	n := 0
	if d.have && off < d.floor {
		if err := d.open(nil); err != nil {
			return err
		}
		want := min(int64(len(p)), d.floor-off)
		m, err := d.back.ReadAt(p[:want], off)
		if err != nil && err != io.EOF {
			return err
		}
		n = m
	}
	clear(p[n:])
	return nil
}

// readAt reads up to len(p) bytes at off, as the running system sees them.
func (d *fileData) readAt(p []byte, off int64) (int, error) {
	if off >= d.size {
		return 0, nil
	}
	end := min(d.size, off+int64(len(p)))
	pos := off
	for pos < end {
		pg := pos / pageSize
		if b, ok := d.pages[pg]; ok {
			k := min(end, (pg+1)*pageSize) - pos
			copy(p[pos-off:pos-off+k], b[pos-pg*pageSize:])
			pos += k
			continue
		}
		// A run of clean pages is read from the backing file at once.
		runEnd := min(end, (pg+1)*pageSize)
		for runEnd < end {
			if _, ok := d.pages[runEnd/pageSize]; ok {
				break
			}
			runEnd = min(end, runEnd+pageSize)
		}
		if err := d.base(p[pos-off:runEnd-off], pos); err != nil {
			return 0, err
		}
		pos = runEnd
	}
	return int(end - off), nil
}

// writeAt keeps p at off in dirty pages.
func (d *fileData) writeAt(p []byte, off int64) error {
	if d.pages == nil {
		d.pages = map[int64][]byte{}
	}
	end := off + int64(len(p))
	for pos := off; pos < end; {
		pg := pos / pageSize
		b, ok := d.pages[pg]
		if !ok {
			b = make([]byte, pageSize)
			if err := d.base(b, pg*pageSize); err != nil {
				return err
			}
			d.pages[pg] = b
		}
		k := min(end, (pg+1)*pageSize) - pos
		copy(b[pos-pg*pageSize:], p[pos-off:pos-off+k])
		pos += k
	}
	d.size = max(d.size, end)
	return nil
}

// truncate sets the size; bytes cut off read as zero if the file grows again.
func (d *fileData) truncate(size int64) {
	if size < d.size {
		for pg, b := range d.pages {
			switch start := pg * pageSize; {
			case start >= size:
				delete(d.pages, pg)
			case start+pageSize > size:
				clear(b[size-start:])
			}
		}
		d.floor = min(d.floor, size)
	}
	d.size = size
	d.trunc = true
}

// sync writes the pending state to the backing data file at path: after
// it, the backing file alone holds the file's contents.
func (d *fileData) sync(created func() error, fsync bool) error {
	if !d.dirty() && (d.have || d.size == 0) {
		return nil
	}
	if err := d.open(created); err != nil {
		return err
	}
	// Cut what a truncate removed, then extend with zeros to the size.
	if err := d.back.Truncate(d.floor); err != nil {
		return fmt.Errorf("powerfs: write back %s: %w", d.path, err)
	}
	if err := d.back.Truncate(d.size); err != nil {
		return fmt.Errorf("powerfs: write back %s: %w", d.path, err)
	}
	for pg, b := range d.pages {
		start := pg * pageSize
		n := min(int64(pageSize), d.size-start)
		if n <= 0 {
			continue
		}
		if _, err := d.back.WriteAt(b[:n], start); err != nil {
			return fmt.Errorf("powerfs: write back %s: %w", d.path, err)
		}
	}
	if fsync {
		if err := d.back.Sync(); err != nil {
			return fmt.Errorf("powerfs: write back %s: %w", d.path, err)
		}
	}
	d.blen, d.floor, d.pages, d.trunc = d.size, d.size, nil, false
	return nil
}

// open opens the backing data file, creating it (and calling created)
// if it does not exist yet.
func (d *fileData) open(created func() error) error {
	if d.back != nil {
		return nil
	}
	f, err := os.OpenFile(d.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("powerfs: open backing %s: %w", d.path, err)
	}
	d.back = f
	if !d.have {
		d.have = true
		if created != nil {
			return created()
		}
	}
	return nil
}

// close closes the backing file, if open.
func (d *fileData) close() {
	if d.back != nil {
		d.back.Close()
		d.back = nil
	}
}
