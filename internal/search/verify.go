package search

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"go.etcd.io/bbolt"
)

// A flipped bit in the index's files (disk rot) is not a crash: nothing
// else notices it. Zap, the segment format, ends each segment file with
// a CRC-32 (IEEE) of everything before it, but only writes it: opening a
// segment maps the file and reads the footer's offsets, never checking
// that CRC (zapx v16 segment.go, loadConfig). Scorch's root.bolt (which
// segments make the index, their deleted documents, the internal keys)
// is a bbolt file, whose meta pages carry a checksum bbolt checks on open,
// but whose other pages carry none. So Open checks, before the index
// serves: root.bolt's page structure (bbolt's consistency check, read-only,
// before scorch opens it), then every segment file the opened index uses
// against its footer's CRC. A mismatch means the index is damaged: it is
// rebuilt from the state, as when it is missing (internal/search/DESIGN.md,
// "Damaged files").

// errDamaged matches the errors of verifyRoot and verifySegments.
var errDamaged = errors.New("damaged")

// damagedFile is a file of the index whose bytes do not check.
type damagedFile struct {
	file string // relative to the index's directory
	why  string
}

func (d *damagedFile) Error() string { return d.file + " is damaged: " + d.why }
func (d *damagedFile) Is(target error) bool {
	return target == errDamaged
}

// verifyRoot runs bbolt's consistency check on the index's root.bolt,
// read-only, before scorch opens it. A missing file is not damage (Open
// then finds no index). A file bbolt cannot open is left to scorch's own
// open, which fails the same way and leads to a rebuild.
func verifyRoot(indexPath string) error {
	path := filepath.Join(indexPath, "store", "root.bolt")
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return nil
	}
	defer db.Close()
	return db.View(func(tx *bbolt.Tx) (err error) {
		defer func() {
			// bbolt may panic on a page whose header is garbage.
			if p := recover(); p != nil {
				err = &damagedFile{file: "store/root.bolt", why: fmt.Sprint(p)}
			}
		}()
		for cerr := range tx.Check() { // read to the end: the check stops when it closes the channel
			if err == nil {
				err = &damagedFile{file: "store/root.bolt", why: cerr.Error()}
			}
		}
		return err
	})
}

// openChecked opens the bleve index at path, a panic of the library on
// damaged files turned into an error.
func openChecked(path string) (idx bleve.Index, err error) {
	defer func() {
		if p := recover(); p != nil {
			idx, err = nil, fmt.Errorf("search: opening the index panicked: %v", p)
		}
	}()
	return bleve.OpenUsing(path, storeConfig())
}

// verifySegments checks every segment file idx uses against the CRC-32 in
// its footer.
func verifySegments(idx bleve.Index, indexPath string) error {
	adv, err := idx.Advanced()
	if err != nil {
		return err
	}
	r, err := adv.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return fmt.Errorf("search: unexpected index reader %T", r)
	}
	for _, s := range snap.Segments() {
		seg, ok := s.Segment().(interface{ Path() string })
		if !ok {
			continue // in memory: nothing on disk to check
		}
		if err := verifySegment(seg.Path()); err != nil {
			rel, rerr := filepath.Rel(indexPath, seg.Path())
			if rerr != nil {
				rel = seg.Path()
			}
			if errors.Is(err, errDamaged) {
				return &damagedFile{file: filepath.ToSlash(rel), why: err.(*damagedFile).why}
			}
			return fmt.Errorf("search: %s: %w", rel, err)
		}
	}
	return nil
}

// verifySegment checks one zap file: the CRC-32 (IEEE) of all but its last
// 4 bytes must equal those 4 bytes, big-endian.
func verifySegment(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < 4 {
		return &damagedFile{file: path, why: fmt.Sprintf("%d bytes, shorter than its footer", st.Size())}
	}
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, st.Size()-4)); err != nil {
		return err
	}
	var tail [4]byte
	if _, err := f.ReadAt(tail[:], st.Size()-4); err != nil {
		return err
	}
	if want, got := binary.BigEndian.Uint32(tail[:]), h.Sum32(); want != got {
		return &damagedFile{file: path, why: fmt.Sprintf("stored CRC-32 %08x, computed %08x", want, got)}
	}
	return nil
}
