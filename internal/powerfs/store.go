package powerfs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// The backing directory is the disk: what survives a power cut. It holds
// one data file per regular file (data/INO) and one listing per directory
// (dirs/INO, JSON), both named by inode number, so a file's fsync writes
// its data without having to know its names, and a directory's fsync
// writes its names without touching any file's data. Mount rebuilds the
// tree from the root's listing (inode 1) and removes every object that no
// synced listing reaches (the orphans a cut leaves, as fsck would).

const rootIno = 1

// entry is one name in a directory listing as stored.
type entry struct {
	Name   string `json:"n"`
	Ino    uint64 `json:"i"`
	Mode   uint32 `json:"m"`
	Target string `json:"t,omitempty"`
}

// node is one inode of the running system.
type node struct {
	ino     uint64
	mode    uint32 // file type bits and permissions
	links   int    // names in the running tree
	refs    int    // names in synced listings
	lookups uint64 // the kernel's references (FUSE lookup count)
	opens   int
	mtime   time.Time

	// directories
	children map[string]uint64
	synced   map[string]entry // what its last fsync wrote (or what mount read)
	pending  int              // name operations in it since its last fsync
	dparent  uint64           // the directory whose synced listing names it (0: none)
	dname    string

	target string    // symlinks
	data   *fileData // regular files
}

func (n *node) isDir() bool  { return n.mode&syscall.S_IFMT == syscall.S_IFDIR }
func (n *node) isFile() bool { return n.mode&syscall.S_IFMT == syscall.S_IFREG }

func (fs *FS) dataPath(ino uint64) string {
	return filepath.Join(fs.backing, "data", strconv.FormatUint(ino, 10))
}

func (fs *FS) dirPath(ino uint64) string {
	return filepath.Join(fs.backing, "dirs", strconv.FormatUint(ino, 10))
}

// newNode makes a node of the running tree with a fresh inode number.
func (fs *FS) newNode(mode uint32) *node {
	n := &node{ino: fs.next, mode: mode, mtime: time.Now()}
	fs.next++
	fs.init(n)
	fs.nodes[n.ino] = n
	return n
}

func (fs *FS) init(n *node) {
	switch {
	case n.isDir():
		n.children = map[string]uint64{}
	case n.isFile():
		n.data = &fileData{path: fs.dataPath(n.ino)}
	}
}

// load reads the synced tree from the backing directory and removes the
// objects it does not reach.
func (fs *FS) load() error {
	for _, d := range []string{"data", "dirs"} {
		if err := os.MkdirAll(filepath.Join(fs.backing, d), 0o700); err != nil {
			return fmt.Errorf("powerfs: backing: %w", err)
		}
	}
	fs.nodes = map[uint64]*node{}
	root := &node{ino: rootIno, mode: syscall.S_IFDIR | 0o755, links: 1, refs: 1, mtime: time.Now()}
	fs.init(root)
	fs.nodes[rootIno] = root
	queue := []*node{root}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		list, err := readListing(fs.dirPath(d.ino))
		if err != nil {
			return err
		}
		d.synced = map[string]entry{}
		for _, e := range list {
			n := fs.nodes[e.Ino]
			if n == nil {
				n = &node{ino: e.Ino, mode: e.Mode, target: e.Target}
				fs.init(n)
				if n.isFile() {
					if st, err := os.Stat(n.data.path); err == nil {
						n.data.have = true
						n.data.size, n.data.blen, n.data.floor = st.Size(), st.Size(), st.Size()
						n.mtime = st.ModTime()
					}
				}
				if n.mtime.IsZero() {
					n.mtime = time.Now()
				}
				fs.nodes[e.Ino] = n
				if n.isDir() {
					n.dparent, n.dname = d.ino, e.Name
					queue = append(queue, n)
				}
			} else if n.isDir() {
				// A directory synced under a second name (see DESIGN.md):
				// the first one found is kept.
				continue
			}
			n.links++
			n.refs++
			d.children[e.Name] = e.Ino
			d.synced[e.Name] = e
			fs.next = max(fs.next, e.Ino+1)
		}
	}
	fs.next = max(fs.next, rootIno+1)
	return fs.removeOrphans()
}

func readListing(path string) ([]entry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // a directory whose names were never synced
	}
	if err != nil {
		return nil, fmt.Errorf("powerfs: backing: %w", err)
	}
	var list []entry
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("powerfs: backing listing %s: %w", path, err)
	}
	return list, nil
}

func (fs *FS) removeOrphans() error {
	for _, d := range []string{"data", "dirs"} {
		ents, err := os.ReadDir(filepath.Join(fs.backing, d))
		if err != nil {
			return fmt.Errorf("powerfs: backing: %w", err)
		}
		for _, e := range ents {
			ino, err := strconv.ParseUint(e.Name(), 10, 64)
			if n := fs.nodes[ino]; err == nil && n != nil && (d == "data") == n.isFile() {
				continue
			}
			if err := os.Remove(filepath.Join(fs.backing, d, e.Name())); err != nil {
				return fmt.Errorf("powerfs: remove orphan: %w", err)
			}
		}
	}
	return nil
}

// syncFile makes a file's data what the backing directory holds.
func (fs *FS) syncFile(n *node) error {
	return n.data.sync(func() error { return fs.syncBackingDir("data") }, fs.opts.SyncBacking)
}

// syncDir makes a directory's names what the backing directory holds.
// A directory moved here from another directory leaves that one's synced
// listing too, and one moved from here to another directory is stored
// there (a rename of a directory is atomic, as on a journaling file
// system); see DESIGN.md for files.
func (fs *FS) syncDir(d *node) error {
	list := make(map[string]entry, len(d.children))
	for name, ino := range d.children {
		c := fs.nodes[ino]
		list[name] = entry{Name: name, Ino: ino, Mode: c.mode, Target: c.target}
	}
	if err := fs.writeListing(d.ino, list); err != nil {
		return err
	}
	old := d.synced
	d.synced, d.pending = list, 0
	for name, e := range list {
		if o, ok := old[name]; ok && o.Ino == e.Ino {
			continue
		}
		c := fs.nodes[e.Ino]
		c.refs++
		if c.isDir() {
			if p := fs.nodes[c.dparent]; c.dparent != 0 && p != nil && p != d {
				if _, ok := p.synced[c.dname]; ok {
					delete(p.synced, c.dname)
					c.refs--
					if err := fs.writeListing(p.ino, p.synced); err != nil {
						return err
					}
				}
			}
			c.dparent, c.dname = d.ino, name
		}
	}
	for name, o := range old {
		if e, ok := list[name]; ok && e.Ino == o.Ino {
			continue
		}
		c := fs.nodes[o.Ino]
		if c == nil {
			continue
		}
		c.refs--
		if c.isDir() && c.dparent == d.ino && c.dname == name {
			c.dparent = 0
			// Moved out to another directory: the move is stored whole.
			if err := fs.storeMovedDir(c); err != nil {
				return err
			}
		}
		fs.maybeDrop(c)
	}
	return nil
}

// storeMovedDir adds a directory that has just left its parent's stored
// listing to the stored listing of the directory that holds it now, if
// that one is stored: a rename of a directory is atomic whichever of its
// two parents is fsynced.
func (fs *FS) storeMovedDir(c *node) error {
	for _, p := range fs.nodes {
		if !p.isDir() || p.synced == nil {
			continue
		}
		for name, ino := range p.children {
			if ino != c.ino {
				continue
			}
			p.synced[name] = entry{Name: name, Ino: c.ino, Mode: c.mode}
			c.refs++
			c.dparent, c.dname = p.ino, name
			return fs.writeListing(p.ino, p.synced)
		}
	}
	return nil
}

// writeListing replaces a directory's stored listing atomically.
func (fs *FS) writeListing(ino uint64, list map[string]entry) error {
	ents := make([]entry, 0, len(list))
	for _, e := range list {
		ents = append(ents, e)
	}
	slices.SortFunc(ents, func(a, b entry) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	b, err := json.Marshal(ents)
	if err != nil {
		return err
	}
	path := fs.dirPath(ino)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("powerfs: write listing: %w", err)
	}
	_, err = f.Write(b)
	if err == nil && fs.opts.SyncBacking {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("powerfs: write listing: %w", err)
	}
	return fs.syncBackingDir("dirs")
}

func (fs *FS) syncBackingDir(name string) error {
	if !fs.opts.SyncBacking {
		return nil
	}
	f, err := os.Open(filepath.Join(fs.backing, name))
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// maybeDrop removes what no one can reach any more: the stored object of
// an inode that neither a synced listing nor the running tree names, once
// the kernel and open files have let go of it too, and the node itself.
func (fs *FS) maybeDrop(n *node) {
	if n.ino == rootIno || n.refs > 0 || n.links > 0 || n.lookups > 0 || n.opens > 0 {
		return
	}
	switch {
	case n.isFile():
		n.data.close()
		if n.data.have {
			os.Remove(n.data.path) // a failure leaves an orphan, removed at mount
		}
	case n.isDir() && n.synced != nil:
		os.Remove(fs.dirPath(n.ino))
		synced := n.synced
		n.synced = nil
		for name, e := range synced {
			if c := fs.nodes[e.Ino]; c != nil {
				c.refs--
				if c.isDir() && c.dparent == n.ino && c.dname == name {
					c.dparent = 0
				}
				fs.maybeDrop(c)
			}
		}
	}
	delete(fs.nodes, n.ino)
}
