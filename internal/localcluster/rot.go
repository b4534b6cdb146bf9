package localcluster

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// Rot is one byte a simulated rotting disk changed in a node's file.
type Rot struct {
	// File is the damaged file, relative to the node's data directory.
	File string
	// Offset is the byte's position in File; Was and Now its values.
	Offset   int64
	Was, Now byte
	// Key is the bbolt key whose value holds the byte (a log index for
	// raft.db, an entry's sequence number for state.db).
	Key uint64
}

func (r Rot) String() string {
	return fmt.Sprintf("%s offset %d (key %d): %q → %q", r.File, r.Offset, r.Key, r.Was, r.Now)
}

// ErrNothingToRot is returned when a node's file holds no value of the
// kind asked for (no post yet, or all of them already compacted).
var ErrNothingToRot = errors.New("localcluster: nothing to rot")

// RotLog changes one digit of a post's body inside the raft log of the
// stopped node i: in the newest entry after its newest snapshot and after
// index after that carries marker, so that the node reads the entry again
// when it starts (raft replays what follows its snapshot). The value
// stays valid UTF-8 and JSON: only a checksum can tell.
func (c *Cluster) RotLog(i int, marker []byte, after uint64) (Rot, error) {
	n, err := c.stopped(i)
	if err != nil {
		return Rot{}, err
	}
	after = max(after, newestSnapshot(filepath.Join(n.DataDir, "snapshots")))
	return rotValue(filepath.Join(n.DataDir, "raft.db"), "raft.db", []byte("logs"), marker, func(k uint64) bool { return k > after }, true)
}

// RotState changes one digit of a post's body in the state file of the
// stopped node i: in the newest entry record that carries marker, created
// after log index after (records are keyed by it).
func (c *Cluster) RotState(i int, marker []byte, after uint64) (Rot, error) {
	n, err := c.stopped(i)
	if err != nil {
		return Rot{}, err
	}
	return rotValue(filepath.Join(n.DataDir, "state.db"), "state.db", []byte("entries"), marker, func(k uint64) bool { return k > after }, true)
}

func (c *Cluster) stopped(i int) (*Node, error) {
	if i < 0 || i >= len(c.nodes) {
		return nil, fmt.Errorf("localcluster: no node %d", i)
	}
	if c.Running(i) {
		return nil, fmt.Errorf("localcluster: %s is running; stop it before damaging its files", c.nodes[i].ID)
	}
	return c.nodes[i], nil
}

// newestSnapshot returns the index of the newest snapshot under dir, 0
// when there is none.
func newestSnapshot(dir string) uint64 {
	metas, _ := filepath.Glob(filepath.Join(dir, "*", "meta.json"))
	var newest uint64
	for _, m := range metas {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		var meta struct{ Index uint64 }
		if json.Unmarshal(b, &meta) == nil {
			newest = max(newest, meta.Index)
		}
	}
	return newest
}

// rotValue finds, in bucket of the bbolt file at path, the first value
// (from the newest key when newest, else from the oldest) whose key
// passes keep and that holds marker followed by a digit, and changes that
// digit in the file. The position comes from the value's address in
// bbolt's read-only map of the file: the live copy, not a stale one on a
// freed page.
//
// The map is of a copy, read with read(2): the file may be on a powerfs
// mount (internal/powerfs) served by this very process, and a page fault
// on a map of a FUSE file cannot be preempted, so the runtime's next
// stop-the-world waits for it while the FUSE server that would answer it
// is stopped — a deadlock of the whole chaos run (seen in a soak). A
// goroutine in a read system call holds up nothing. The node is stopped,
// so the copy is the file byte for byte and its offsets are the file's.
func rotValue(path, name string, bucket, marker []byte, keep func(uint64) bool, newest bool) (Rot, error) {
	cp, err := copyToTemp(path)
	if err != nil {
		return Rot{}, err
	}
	defer os.Remove(cp)
	db, err := bolt.Open(cp, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return Rot{}, err
	}
	rot := Rot{File: name, Offset: -1}
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil {
			return nil
		}
		base := db.Info().Data
		cur := b.Cursor()
		first, next := cur.First, cur.Next
		if newest {
			first, next = cur.Last, cur.Prev
		}
		for k, v := first(); k != nil; k, v = next() {
			if len(k) != 8 || !keep(binary.BigEndian.Uint64(k)) {
				continue
			}
			at := bytes.Index(v, marker)
			if at < 0 || at+len(marker) >= len(v) || v[at+len(marker)] < '0' || v[at+len(marker)] > '9' {
				continue
			}
			pos := at + len(marker)
			rot.Key = binary.BigEndian.Uint64(k)
			rot.Offset = int64(uintptr(unsafe.Pointer(&v[pos])) - base)
			rot.Was = v[pos]
			rot.Now = '0' + (v[pos]-'0'+1)%10
			return nil
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Rot{}, err
	}
	if rot.Offset < 0 {
		return Rot{}, fmt.Errorf("%w: no value in %s/%s holds %q", ErrNothingToRot, name, bucket, marker)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return Rot{}, err
	}
	if _, err := f.WriteAt([]byte{rot.Now}, rot.Offset); err != nil {
		f.Close()
		return Rot{}, err
	}
	return rot, f.Close()
}

// copyToTemp copies the file at path into a new file of the system's
// temporary directory and returns the copy's path.
func copyToTemp(path string) (string, error) {
	src, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst, err := os.CreateTemp("", "restarea-rot-*.db")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst.Name())
		return "", err
	}
	return dst.Name(), nil
}

// WaitExit waits up to timeout for node i's process to end by itself and
// returns its exit code; ok is false when it is still running.
func (c *Cluster) WaitExit(i int, timeout time.Duration) (code int, ok bool) {
	c.mu.Lock()
	n := c.nodes[i]
	exited := n.exited
	c.mu.Unlock()
	if exited == nil {
		return 0, false
	}
	select {
	case <-exited:
	case <-time.After(timeout):
		return 0, false
	}
	var ee interface{ ExitCode() int }
	if errors.As(n.exitErr, &ee) {
		return ee.ExitCode(), true
	}
	return 0, true
}

// LogTail returns the last max bytes node i's process wrote (stdout and
// stderr, every start of it), "" when there are none.
func (c *Cluster) LogTail(i int, max int64) string {
	f, err := os.Open(c.nodes[i].LogFile)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max64(0, st.Size()-max)
	b := make([]byte, st.Size()-off)
	n, _ := f.ReadAt(b, off)
	return string(b[:n])
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
