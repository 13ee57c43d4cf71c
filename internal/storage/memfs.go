package storage

import (
	"errors"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// MemFS is an in-memory FS that models power loss. Per file it keeps the content as last
// fsynced and the current content; per directory, the entries as last SyncDir'd and the
// current entries. Crash reverts everything to the synced state: every byte and every
// directory entry (create, remove, rename) that was not synced is lost, and a file whose
// directory entry was never synced is gone even if its data was. CrashWithTornWrites
// additionally keeps a random part of what was not synced, as a real disk may.
//
// Paths are slash-separated; relative paths are taken from the root. The root directory
// always exists. File handles opened before a crash fail afterwards with ErrStaleHandle.
type MemFS struct {
	mu   sync.Mutex
	root *memNode
	gen  atomic.Uint64 // bumped by each crash; handles of an older generation are dead
}

// ErrStaleHandle is returned by a MemFS file handle opened before the last crash.
var ErrStaleHandle = errors.New("memfs: file handle from before a crash")

type memNode struct {
	isDir bool

	// directory state (guarded by MemFS.mu)
	cur    map[string]*memNode
	synced map[string]*memNode

	// file state (guarded by fmu)
	fmu sync.RWMutex
	// data is the current content; durable the content as of the last Sync. durable may
	// share data's backing array (as a prefix with its capacity clipped), so any write
	// below len(durable) copies data first (see own).
	data    []byte
	durable []byte
	// dirtyFrom is the lowest offset changed since the last Sync (len(data) if clean);
	// everything below it equals durable.
	dirtyFrom int64
	shared    bool
	modTime   time.Time
}

// NewMemFS returns an empty in-memory filesystem.
func NewMemFS() *MemFS {
	return &MemFS{root: newDirNode()}
}

func newDirNode() *memNode {
	return &memNode{isDir: true, cur: map[string]*memNode{}, synced: map[string]*memNode{}}
}

func cleanPath(name string) string { return path.Clean("/" + name) }

// lookup walks the current tree. Caller holds fs.mu.
func (fs *MemFS) lookup(name string) *memNode {
	p := cleanPath(name)
	if p == "/" {
		return fs.root
	}
	n := fs.root
	for _, part := range splitPath(p) {
		if !n.isDir {
			return nil
		}
		n = n.cur[part]
		if n == nil {
			return nil
		}
	}
	return n
}

func splitPath(p string) []string {
	var parts []string
	for p != "/" {
		dir, base := path.Split(p)
		parts = append(parts, base)
		p = path.Clean(dir)
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return parts
}

// parentOf returns the parent directory node and base name. Caller holds fs.mu.
func (fs *MemFS) parentOf(op, name string) (*memNode, string, error) {
	p := cleanPath(name)
	if p == "/" {
		return nil, "", &os.PathError{Op: op, Path: name, Err: os.ErrInvalid}
	}
	dir, base := path.Split(p)
	d := fs.lookup(dir)
	if d == nil || !d.isDir {
		return nil, "", &os.PathError{Op: op, Path: name, Err: os.ErrNotExist}
	}
	return d, base, nil
}

// OpenFile supports O_RDONLY, O_WRONLY, O_RDWR, O_CREATE, O_EXCL, O_TRUNC and O_APPEND.
func (fs *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, base, err := fs.parentOf("open", name)
	if err != nil {
		return nil, err
	}
	n := d.cur[base]
	if n == nil {
		if flag&os.O_CREATE == 0 {
			return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
		}
		n = &memNode{modTime: time.Now()}
		d.cur[base] = n
	} else {
		if flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL {
			return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrExist}
		}
		if n.isDir {
			if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
				return nil, &os.PathError{Op: "open", Path: name, Err: errors.New("is a directory")}
			}
		}
	}
	h := &memFile{fs: fs, n: n, gen: fs.gen.Load(), name: name, flag: flag}
	if flag&os.O_TRUNC != 0 && !n.isDir {
		n.fmu.Lock()
		n.truncate(0)
		n.fmu.Unlock()
	}
	return h, nil
}

// Remove removes a file or an empty directory.
func (fs *MemFS) Remove(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, base, err := fs.parentOf("remove", name)
	if err != nil {
		return err
	}
	n := d.cur[base]
	if n == nil {
		return &os.PathError{Op: "remove", Path: name, Err: os.ErrNotExist}
	}
	if n.isDir && len(n.cur) > 0 {
		return &os.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
	}
	delete(d.cur, base)
	return nil
}

// RemoveAll removes name and everything below it; a missing name is not an error.
func (fs *MemFS) RemoveAll(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if cleanPath(name) == "/" {
		clear(fs.root.cur)
		return nil
	}
	d, base, err := fs.parentOf("removeall", name)
	if err != nil {
		return nil
	}
	// The subtree's own entries are left as they are: they are unreachable in the current
	// tree, and if the removal is lost in a crash the subtree comes back as last synced.
	delete(d.cur, base)
	return nil
}

// Rename moves a file or directory, replacing a file at newname.
func (fs *MemFS) Rename(oldname, newname string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	od, ob, err := fs.parentOf("rename", oldname)
	if err != nil {
		return err
	}
	n := od.cur[ob]
	if n == nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: os.ErrNotExist}
	}
	nd, nb, err := fs.parentOf("rename", newname)
	if err != nil {
		return err
	}
	if t := nd.cur[nb]; t != nil && t.isDir {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: os.ErrExist}
	}
	delete(od.cur, ob)
	nd.cur[nb] = n
	return nil
}

// MkdirAll creates a directory and its missing parents (entries unsynced, like files).
func (fs *MemFS) MkdirAll(name string, perm os.FileMode) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := fs.root
	for _, part := range splitPath(cleanPath(name)) {
		c := n.cur[part]
		if c == nil {
			c = newDirNode()
			n.cur[part] = c
		} else if !c.isDir {
			return &os.PathError{Op: "mkdir", Path: name, Err: errors.New("not a directory")}
		}
		n = c
	}
	return nil
}

// ReadDir lists the current entries of a directory, sorted.
func (fs *MemFS) ReadDir(name string) ([]string, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d := fs.lookup(name)
	if d == nil {
		return nil, &os.PathError{Op: "readdir", Path: name, Err: os.ErrNotExist}
	}
	if !d.isDir {
		return nil, &os.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	names := make([]string, 0, len(d.cur))
	for k := range d.cur {
		names = append(names, k)
	}
	sort.Strings(names)
	return names, nil
}

// Stat describes a file or directory.
func (fs *MemFS) Stat(name string) (os.FileInfo, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := fs.lookup(name)
	if n == nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: os.ErrNotExist}
	}
	fi := memFileInfo{name: path.Base(cleanPath(name)), dir: n.isDir}
	if !n.isDir {
		n.fmu.RLock()
		fi.size = int64(len(n.data))
		fi.mod = n.modTime
		n.fmu.RUnlock()
	}
	return fi, nil
}

// SyncDir makes a directory's current entries its durable entries.
func (fs *MemFS) SyncDir(name string) error {
	_, _, err := fs.syncDir(name)
	return err
}

// syncDir is SyncDir; it also returns the directory's node and a copy of its new durable
// entries (PowerLossFS mirrors them on disk).
func (fs *MemFS) syncDir(name string) (*memNode, map[string]*memNode, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d := fs.lookup(name)
	if d == nil {
		return nil, nil, &os.PathError{Op: "syncdir", Path: name, Err: os.ErrNotExist}
	}
	if !d.isDir {
		return nil, nil, &os.PathError{Op: "syncdir", Path: name, Err: errors.New("not a directory")}
	}
	d.synced = make(map[string]*memNode, len(d.cur))
	for k, v := range d.cur {
		d.synced[k] = v
	}
	return d, maps.Clone(d.synced), nil
}

// syncedEntries returns a copy of directory d's durable entries.
func (fs *MemFS) syncedEntries(d *memNode) map[string]*memNode {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return maps.Clone(d.synced)
}

// durableData returns the file's content as of its last Sync. The slice is a snapshot:
// MemFS never writes to it afterwards (writes below its length copy the data first).
func (n *memNode) durableData() []byte {
	n.fmu.RLock()
	defer n.fmu.RUnlock()
	return n.durable
}

// newDurableFile returns a file node whose whole content, data, is durable (PowerLossFS
// loads what is on disk so). data must not be modified afterwards.
func newDurableFile(data []byte, mod time.Time) *memNode {
	return &memNode{data: data, durable: data[:len(data):len(data)], shared: true,
		dirtyFrom: int64(len(data)), modTime: mod}
}

// linkDurable adds a durable entry to directory d, which no other goroutine can see yet.
func (d *memNode) linkDurable(name string, n *memNode) {
	d.cur[name] = n
	d.synced[name] = n
}

// Crash simulates power loss: only synced bytes and synced directory entries survive.
// Handles opened before the crash stop working.
func (fs *MemFS) Crash() { fs.crash(nil) }

// CrashWithTornWrites simulates power loss on a disk that had written part of what was
// not yet synced: for each file, a random prefix of the bytes appended since its last
// sync survives, sometimes followed by garbage or with a hole of garbage or zeros in it;
// each unsynced directory change independently survives or not. Anything that was
// synced survives exactly, as in Crash.
func (fs *MemFS) CrashWithTornWrites(rng *rand.Rand) { fs.crash(rng) }

func (fs *MemFS) crash(rng *rand.Rand) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.gen.Add(1)
	seen := map[*memNode]bool{}
	var walk func(d *memNode)
	walk = func(d *memNode) {
		if seen[d] {
			return
		}
		seen[d] = true
		next := make(map[string]*memNode, len(d.synced))
		for k, v := range d.synced {
			next[k] = v
		}
		if rng != nil {
			// Each unsynced change to this directory survives with probability 1/2.
			names := make([]string, 0, len(d.cur)+len(d.synced))
			for k := range d.cur {
				names = append(names, k)
			}
			for k := range d.synced {
				if _, ok := d.cur[k]; !ok {
					names = append(names, k)
				}
			}
			sort.Strings(names) // deterministic for a given rng
			for _, k := range names {
				c, s := d.cur[k], d.synced[k]
				if c == s || rng.IntN(2) == 0 {
					continue
				}
				if c == nil {
					delete(next, k)
				} else {
					next[k] = c
				}
			}
		}
		d.cur = next
		d.synced = make(map[string]*memNode, len(next))
		names := make([]string, 0, len(next))
		for k, v := range next {
			d.synced[k] = v
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			n := next[k]
			if n.isDir {
				walk(n)
			} else if !seen[n] {
				seen[n] = true
				n.fmu.Lock()
				n.revert(rng)
				n.fmu.Unlock()
			}
		}
	}
	walk(fs.root)
}

// revert sets the file to its durable content, plus (with rng) a torn part of the
// unsynced appended bytes. Caller holds n.fmu.
func (n *memNode) revert(rng *rand.Rand) {
	durLen := int64(len(n.durable))
	var keep []byte
	if rng != nil && n.dirtyFrom >= durLen && int64(len(n.data)) > durLen {
		// Unsynced bytes were appended after the durable content: keep a random prefix.
		extra := n.data[durLen:]
		k := rng.IntN(len(extra) + 1)
		keep = append([]byte(nil), extra[:k]...)
		switch rng.IntN(4) {
		case 0: // a hole of garbage or zeros inside the kept part
			if len(keep) > 0 {
				i := rng.IntN(len(keep))
				j := i + 1 + rng.IntN(len(keep)-i)
				zero := rng.IntN(2) == 0
				for x := i; x < j; x++ {
					if zero {
						keep[x] = 0
					} else {
						keep[x] = byte(rng.Uint32())
					}
				}
			}
		case 1: // garbage after the kept part
			g := 1 + rng.IntN(256)
			for range g {
				keep = append(keep, byte(rng.Uint32()))
			}
		}
	}
	data := make([]byte, 0, len(n.durable)+len(keep))
	data = append(data, n.durable...)
	data = append(data, keep...)
	n.data = data
	n.durable = data[:len(data):len(data)]
	n.shared = true
	n.dirtyFrom = int64(len(data))
}

// own makes n.data safe to modify below len(durable). Caller holds n.fmu.
func (n *memNode) own() {
	if n.shared {
		n.data = append(make([]byte, 0, cap(n.data)), n.data...)
		n.shared = false
	}
}

func (n *memNode) writeAt(p []byte, off int64) {
	end := off + int64(len(p))
	// The bytes changed start at off, or at the current end if the write leaves a hole
	// (zero-filled below); after a truncation that end may be below the durable length.
	if min(off, int64(len(n.data))) < int64(len(n.durable)) {
		n.own()
	}
	if off < n.dirtyFrom {
		n.dirtyFrom = off
	}
	if end > int64(len(n.data)) {
		if end > int64(cap(n.data)) {
			c := 2 * cap(n.data)
			if int64(c) < end {
				c = int(end)
			}
			nd := make([]byte, len(n.data), c)
			copy(nd, n.data)
			n.data = nd
			n.shared = false
		}
		old := len(n.data)
		n.data = n.data[:end]
		if off > int64(old) {
			clear(n.data[old:off])
		}
	}
	copy(n.data[off:end], p)
	n.modTime = time.Now()
}

func (n *memNode) truncate(size int64) {
	if size < int64(len(n.data)) {
		n.data = n.data[:size]
		if size < n.dirtyFrom {
			n.dirtyFrom = size
		}
	} else if size > int64(len(n.data)) {
		n.writeAt(make([]byte, size-int64(len(n.data))), int64(len(n.data)))
	}
	n.modTime = time.Now()
}

func (n *memNode) sync() {
	if n.dirtyFrom >= int64(len(n.data)) && len(n.durable) == len(n.data) {
		return // clean
	}
	// Share data's backing array: durable becomes data's current prefix, capacity clipped,
	// so later appends to data do not show through and later writes below it copy (own).
	n.durable = n.data[:len(n.data):len(n.data)]
	n.shared = true
	n.dirtyFrom = int64(len(n.data))
}

type memFile struct {
	fs     *MemFS
	n      *memNode
	gen    uint64
	name   string
	flag   int
	mu     sync.Mutex // guards pos
	pos    int64
	closed atomic.Bool
}

func (f *memFile) check() error {
	if f.closed.Load() {
		return os.ErrClosed
	}
	if f.fs.gen.Load() != f.gen {
		return ErrStaleHandle
	}
	return nil
}

func (f *memFile) writable() error {
	if f.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return &os.PathError{Op: "write", Path: f.name, Err: os.ErrPermission}
	}
	if f.n.isDir {
		return &os.PathError{Op: "write", Path: f.name, Err: errors.New("is a directory")}
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &os.PathError{Op: "readat", Path: f.name, Err: os.ErrInvalid}
	}
	f.n.fmu.RLock()
	defer f.n.fmu.RUnlock()
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	c := copy(p, f.n.data[off:])
	if c < len(p) {
		return c, io.EOF
	}
	return c, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	if err := f.writable(); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n.fmu.Lock()
	defer f.n.fmu.Unlock()
	if f.flag&os.O_APPEND != 0 {
		f.pos = int64(len(f.n.data))
	}
	f.n.writeAt(p, f.pos)
	f.pos += int64(len(p))
	return len(p), nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	if err := f.writable(); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &os.PathError{Op: "writeat", Path: f.name, Err: os.ErrInvalid}
	}
	f.n.fmu.Lock()
	defer f.n.fmu.Unlock()
	f.n.writeAt(p, off)
	return len(p), nil
}

func (f *memFile) Sync() error {
	if err := f.check(); err != nil {
		return err
	}
	if f.n.isDir {
		return nil
	}
	f.n.fmu.Lock()
	defer f.n.fmu.Unlock()
	f.n.sync()
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.check(); err != nil {
		return err
	}
	if err := f.writable(); err != nil {
		return err
	}
	if size < 0 {
		return &os.PathError{Op: "truncate", Path: f.name, Err: os.ErrInvalid}
	}
	f.n.fmu.Lock()
	defer f.n.fmu.Unlock()
	f.n.truncate(size)
	return nil
}

func (f *memFile) Size() (int64, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	f.n.fmu.RLock()
	defer f.n.fmu.RUnlock()
	return int64(len(f.n.data)), nil
}

func (f *memFile) Close() error {
	if f.closed.Swap(true) {
		return os.ErrClosed
	}
	return nil
}

type memFileInfo struct {
	name string
	size int64
	dir  bool
	mod  time.Time
}

func (fi memFileInfo) Name() string { return fi.name }
func (fi memFileInfo) Size() int64  { return fi.size }
func (fi memFileInfo) Mode() os.FileMode {
	if fi.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}
func (fi memFileInfo) ModTime() time.Time { return fi.mod }
func (fi memFileInfo) IsDir() bool        { return fi.dir }
func (fi memFileInfo) Sys() any           { return nil }
