package powerfs

import (
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// The FUSE operations. Every one takes fs.mu for its whole length: the
// file system is a test tool, and one lock makes a Cut atomic with respect
// to every operation (nothing is half applied when the power goes).

// timeout is how long the kernel may cache names and attributes: nothing
// but this mount changes the tree, so the cache is never stale.
const timeout = time.Second

const (
	renameNoReplace = 1 // RENAME_NOREPLACE
	renameExchange  = 2 // RENAME_EXCHANGE
)

// lookup returns the live node for ino, or the status to answer.
func (fs *FS) lookupNode(ino uint64) (*node, fuse.Status) {
	if fs.cut {
		return nil, fuse.EIO
	}
	n := fs.nodes[ino]
	if n == nil {
		return nil, fuse.ENOENT
	}
	return n, fuse.OK
}

func (fs *FS) dir(ino uint64) (*node, fuse.Status) {
	n, st := fs.lookupNode(ino)
	if st == fuse.OK && !n.isDir() {
		return nil, fuse.ENOTDIR
	}
	return n, st
}

// child returns directory dirIno and its entry name.
func (fs *FS) child(dirIno uint64, name string) (d, n *node, st fuse.Status) {
	d, st = fs.dir(dirIno)
	if st != fuse.OK {
		return nil, nil, st
	}
	ino, ok := d.children[name]
	if !ok {
		return nil, nil, fuse.ENOENT
	}
	return d, fs.nodes[ino], fuse.OK
}

func (fs *FS) fillAttr(n *node, a *fuse.Attr) {
	*a = fuse.Attr{Ino: n.ino, Mode: n.mode, Nlink: uint32(max(n.links, 1)), Blksize: pageSize}
	switch {
	case n.isFile():
		a.Size = uint64(n.data.size)
	case n.isDir():
		a.Nlink = 2
	default:
		a.Size = uint64(len(n.target))
	}
	a.Blocks = (a.Size + 511) / 512
	a.Owner = fuse.Owner{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
	a.SetTimes(&n.mtime, &n.mtime, &n.mtime)
}

func (fs *FS) fillEntry(n *node, out *fuse.EntryOut) {
	n.lookups++
	out.NodeId = n.ino
	out.SetEntryTimeout(timeout)
	out.SetAttrTimeout(timeout)
	fs.fillAttr(n, &out.Attr)
}

// Lookup answers the kernel's name lookups.
func (fs *FS) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	_, n, st := fs.child(h.NodeId, name)
	if st != fuse.OK {
		return st
	}
	fs.fillEntry(n, out)
	return fuse.OK
}

// Forget drops the kernel's references to an inode.
func (fs *FS) Forget(ino, nlookup uint64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if n := fs.nodes[ino]; n != nil && !fs.cut {
		n.lookups -= min(n.lookups, nlookup)
		fs.maybeDrop(n)
	}
}

// GetAttr reports an inode's attributes.
func (fs *FS) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, st := fs.lookupNode(in.NodeId)
	if st != fuse.OK {
		return st
	}
	out.SetTimeout(timeout)
	fs.fillAttr(n, &out.Attr)
	return fuse.OK
}

// SetAttr changes mode, size (truncate) and times; owners are ignored.
func (fs *FS) SetAttr(_ <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, st := fs.lookupNode(in.NodeId)
	if st != fuse.OK {
		return st
	}
	if size, ok := in.GetSize(); ok {
		if !n.isFile() {
			return fuse.EINVAL
		}
		n.data.truncate(int64(size))
		n.mtime = time.Now()
	}
	if mode, ok := in.GetMode(); ok {
		n.mode = n.mode&syscall.S_IFMT | mode&0o7777
	}
	if mt, ok := in.GetMTime(); ok {
		n.mtime = mt
	}
	out.SetTimeout(timeout)
	fs.fillAttr(n, &out.Attr)
	return fuse.OK
}

// add names a new node in d.
func (fs *FS) add(d *node, name string, n *node, out *fuse.EntryOut) {
	d.children[name] = n.ino
	d.pending++
	d.mtime = time.Now()
	n.links++
	fs.fillEntry(n, out)
}

// Mkdir makes a directory whose name is pending until d's fsync.
func (fs *FS) Mkdir(_ <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, st := fs.dir(in.NodeId)
	if st != fuse.OK {
		return st
	}
	if _, ok := d.children[name]; ok {
		return fuse.Status(syscall.EEXIST)
	}
	fs.add(d, name, fs.newNode(syscall.S_IFDIR|in.Mode&0o7777), out)
	return fuse.OK
}

// Symlink makes a symbolic link whose name is pending until d's fsync.
func (fs *FS) Symlink(_ <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, st := fs.dir(h.NodeId)
	if st != fuse.OK {
		return st
	}
	if _, ok := d.children[name]; ok {
		return fuse.Status(syscall.EEXIST)
	}
	n := fs.newNode(syscall.S_IFLNK | 0o777)
	n.target = target
	fs.add(d, name, n, out)
	return fuse.OK
}

// Readlink returns a symbolic link's target.
func (fs *FS) Readlink(_ <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, st := fs.lookupNode(h.NodeId)
	if st != fuse.OK {
		return nil, st
	}
	if n.mode&syscall.S_IFMT != syscall.S_IFLNK {
		return nil, fuse.EINVAL
	}
	return []byte(n.target), fuse.OK
}

// Link adds a hard link to a file, pending until d's fsync.
func (fs *FS) Link(_ <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, st := fs.dir(in.NodeId)
	if st != fuse.OK {
		return st
	}
	n, st := fs.lookupNode(in.Oldnodeid)
	if st != fuse.OK {
		return st
	}
	if n.isDir() {
		return fuse.EPERM
	}
	if _, ok := d.children[name]; ok {
		return fuse.Status(syscall.EEXIST)
	}
	fs.add(d, name, n, out)
	return fuse.OK
}

// remove takes a name out of d; the inode goes when nothing holds it.
func (fs *FS) remove(d *node, name string, n *node) {
	delete(d.children, name)
	d.pending++
	d.mtime = time.Now()
	n.links--
	fs.maybeDrop(n)
}

// Unlink removes a name, pending until d's fsync.
func (fs *FS) Unlink(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, n, st := fs.child(h.NodeId, name)
	if st != fuse.OK {
		return st
	}
	if n.isDir() {
		return fuse.Status(syscall.EISDIR)
	}
	fs.remove(d, name, n)
	return fuse.OK
}

// Rmdir removes an empty directory, pending until d's fsync.
func (fs *FS) Rmdir(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, n, st := fs.child(h.NodeId, name)
	if st != fuse.OK {
		return st
	}
	if !n.isDir() {
		return fuse.ENOTDIR
	}
	if len(n.children) > 0 {
		return fuse.Status(syscall.ENOTEMPTY)
	}
	fs.remove(d, name, n)
	return fuse.OK
}

// Rename moves a name, pending until the fsync of either directory (see
// syncDir for what that fsync covers).
func (fs *FS) Rename(_ <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	src, st := fs.dir(in.NodeId)
	if st != fuse.OK {
		return st
	}
	dst, st := fs.dir(in.Newdir)
	if st != fuse.OK {
		return st
	}
	if in.Flags&renameExchange != 0 {
		return fuse.EINVAL
	}
	ino, ok := src.children[oldName]
	if !ok {
		return fuse.ENOENT
	}
	n := fs.nodes[ino]
	var victim *node
	if vino, ok := dst.children[newName]; ok {
		if in.Flags&renameNoReplace != 0 {
			return fuse.Status(syscall.EEXIST)
		}
		if vino == ino {
			return fuse.OK
		}
		victim = fs.nodes[vino]
		switch {
		case victim.isDir() && !n.isDir():
			return fuse.Status(syscall.EISDIR)
		case !victim.isDir() && n.isDir():
			return fuse.ENOTDIR
		case victim.isDir() && len(victim.children) > 0:
			return fuse.Status(syscall.ENOTEMPTY)
		}
	}
	delete(src.children, oldName)
	dst.children[newName] = ino
	src.pending++
	dst.pending++
	src.mtime, dst.mtime = time.Now(), time.Now()
	if victim != nil {
		victim.links--
		fs.maybeDrop(victim)
	}
	return fuse.OK
}

// Access allows everything the mode bits allow the kernel to check itself.
func (fs *FS) Access(_ <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	_, st := fs.lookupNode(in.NodeId)
	return st
}

// Create makes and opens a regular file whose name is pending until d's
// fsync.
func (fs *FS) Create(_ <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, st := fs.dir(in.NodeId)
	if st != fuse.OK {
		return st
	}
	if ino, ok := d.children[name]; ok {
		if in.Flags&syscall.O_EXCL != 0 {
			return fuse.Status(syscall.EEXIST)
		}
		n := fs.nodes[ino]
		if !n.isFile() {
			return fuse.Status(syscall.EISDIR)
		}
		if in.Flags&syscall.O_TRUNC != 0 {
			n.data.truncate(0)
		}
		n.opens++
		fs.fillEntry(n, &out.EntryOut)
		return fuse.OK
	}
	n := fs.newNode(syscall.S_IFREG | in.Mode&0o7777)
	n.opens++
	fs.add(d, name, n, &out.EntryOut)
	return fuse.OK
}

// Open opens a file. The kernel's page cache is kept coherent by the
// kernel itself (every write passes through it), so mmap works.
func (fs *FS) Open(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, st := fs.lookupNode(in.NodeId)
	if st != fuse.OK {
		return st
	}
	if !n.isFile() {
		return fuse.EINVAL
	}
	if in.Flags&syscall.O_TRUNC != 0 {
		n.data.truncate(0)
		n.mtime = time.Now()
	}
	n.opens++
	return fuse.OK
}

// Read reads what the running system sees: pending writes over the synced
// data.
func (fs *FS) Read(_ <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, st := fs.lookupNode(in.NodeId)
	if st != fuse.OK {
		return nil, st
	}
	if !n.isFile() {
		return nil, fuse.EINVAL
	}
	k, err := n.data.readAt(buf[:min(int(in.Size), len(buf))], int64(in.Offset))
	if err != nil {
		return nil, fuse.EIO
	}
	return fuse.ReadResultData(buf[:k]), fuse.OK
}

// Write keeps the data in memory until the file's fsync.
func (fs *FS) Write(_ <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, st := fs.lookupNode(in.NodeId)
	if st != fuse.OK {
		return 0, st
	}
	if !n.isFile() {
		return 0, fuse.EINVAL
	}
	if err := n.data.writeAt(data, int64(in.Offset)); err != nil {
		return 0, fuse.EIO
	}
	n.mtime = time.Now()
	return uint32(len(data)), fuse.OK
}

// Flush (close of one descriptor) makes nothing durable.
func (fs *FS) Flush(_ <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	_, st := fs.lookupNode(in.NodeId)
	return st
}

// Release is the last close of an open file.
func (fs *FS) Release(_ <-chan struct{}, in *fuse.ReleaseIn) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if n := fs.nodes[in.NodeId]; n != nil && !fs.cut {
		n.opens--
		fs.maybeDrop(n)
	}
}

// Fsync (and fdatasync) makes the file's data durable, not its names.
func (fs *FS) Fsync(_ <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, st := fs.lookupNode(in.NodeId)
	if st != fuse.OK {
		return st
	}
	switch {
	case n.isFile():
		if err := fs.syncFile(n); err != nil {
			fs.log.Error("powerfs: fsync", "ino", n.ino, "err", err)
			return fuse.EIO
		}
	case n.isDir():
		return fs.fsyncDir(n)
	}
	return fuse.OK
}

// FsyncDir makes the directory's names durable.
func (fs *FS) FsyncDir(_ <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, st := fs.dir(in.NodeId)
	if st != fuse.OK {
		return st
	}
	return fs.fsyncDir(d)
}

func (fs *FS) fsyncDir(d *node) fuse.Status {
	if err := fs.syncDir(d); err != nil {
		fs.log.Error("powerfs: fsync directory", "ino", d.ino, "err", err)
		return fuse.EIO
	}
	return fuse.OK
}

// OpenDir takes a snapshot of the names for ReadDir.
func (fs *FS) OpenDir(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, st := fs.dir(in.NodeId)
	if st != fuse.OK {
		return st
	}
	list := []fuse.DirEntry{{Name: ".", Ino: d.ino, Mode: syscall.S_IFDIR}, {Name: "..", Mode: syscall.S_IFDIR}}
	names := make([]string, 0, len(d.children))
	for name := range d.children {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		c := fs.nodes[d.children[name]]
		list = append(list, fuse.DirEntry{Name: name, Ino: c.ino, Mode: c.mode})
	}
	fs.nextFh++
	fs.dirs[fs.nextFh] = list
	out.Fh = fs.nextFh
	return fuse.OK
}

// ReadDir lists the snapshot OpenDir took.
func (fs *FS) ReadDir(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.cut {
		return fuse.EIO
	}
	list := fs.dirs[in.Fh]
	for i := int(in.Offset); i < len(list); i++ {
		e := list[i]
		e.Off = uint64(i + 1)
		if !out.AddDirEntry(e) {
			break
		}
	}
	return fuse.OK
}

// ReleaseDir forgets the snapshot.
func (fs *FS) ReleaseDir(in *fuse.ReleaseIn) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	delete(fs.dirs, in.Fh)
}

// StatFs reports the backing file system's space.
func (fs *FS) StatFs(_ <-chan struct{}, _ *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	fs.mu.Lock()
	cut := fs.cut
	fs.mu.Unlock()
	if cut {
		return fuse.EIO
	}
	var s syscall.Statfs_t
	if err := syscall.Statfs(fs.backing, &s); err != nil {
		return fuse.ToStatus(err)
	}
	*out = fuse.StatfsOut{Blocks: s.Blocks, Bfree: s.Bfree, Bavail: s.Bavail, Files: s.Files, Ffree: s.Ffree,
		Bsize: uint32(s.Bsize), NameLen: uint32(s.Namelen), Frsize: uint32(s.Frsize)}
	return fuse.OK
}

// Fallocate is not supported (EOPNOTSUPP): callers fall back to writing.
func (fs *FS) Fallocate(_ <-chan struct{}, _ *fuse.FallocateIn) fuse.Status {
	return fuse.Status(syscall.EOPNOTSUPP)
}
