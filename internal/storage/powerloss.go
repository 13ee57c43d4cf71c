package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// PowerLossFS is the filesystem of `cairn start --simulate-power-loss`, for fault-injection
// tests only. It has MemFS's durability model, but what is durable survives the process:
//
//   - Every operation is served by an in-memory MemFS. Bytes that were not made durable by
//     File.Sync, and directory entries (creates, removes, renames) that were not made
//     durable by FS.SyncDir, exist only in process memory.
//   - File.Sync and FS.SyncDir also write the now-durable state of that file or directory
//     to the real disk under root (write or rename, then fsync), before they return.
//   - NewPowerLossFS loads what is on disk under root as the durable state.
//
// So killing the process (kill -9, or just abandoning the PowerLossFS) and opening a new
// PowerLossFS on the same root yields exactly what MemFS.Crash would: what a power cut
// leaves. The disk holds the durable state only; each update of it is atomic with respect
// to the death of the process, except that appending durable bytes to a file may stop
// part-way (a torn tail, as a power cut during fsync leaves), and replacing one directory
// by another under the same name in a single SyncDir is not atomic.
//
// Paths: root is the top of the simulated filesystem, normally the broker's data folder.
// Every path given to the FS, absolute or relative to the working directory, must lie
// under root (others fail with ErrOutsideRoot); root itself always exists and is durable.
// The name ".cairn-power-loss-staging" directly under root is reserved: it holds the
// files being written before they are renamed into place.
//
// Memory: the whole content of root lives in RAM (MemFS), durable or not, so this mode
// only suits the small data sets of tests.
type PowerLossFS struct {
	root    string // absolute
	staging string // root/stagingName
	mem     *MemFS
	seq     atomic.Uint64 // names in staging

	// mu orders the disk mirror: SyncDir holds it exclusively, File.Sync shared (with the
	// file's own plState.mu), so file syncs run in parallel and a directory sync sees none.
	mu    sync.RWMutex
	nodes map[*memNode]*plState // every node on disk; written under mu exclusively

	errMu  sync.Mutex
	failed error // sticky: a disk error left the mirror in an unknown state

	hold syncHold // the lab's gate (powerloss_hold.go)
}

// plState is what the disk holds for one MemFS node, at every path where it is durably
// reachable (a node may be at several after a rename across directories whose source
// directory was not synced, as in MemFS).
type plState struct {
	paths map[string]struct{} // slash-separated, relative to root ("" is root)

	mu      sync.Mutex          // files: serializes disk writes under PowerLossFS.mu shared
	written []byte              // files: the content on disk (a MemFS durable snapshot)
	kids    map[string]*memNode // directories: the entries on disk
}

// ErrOutsideRoot is returned by PowerLossFS for a path that is not under its root.
var ErrOutsideRoot = errors.New("powerloss: path outside the simulated filesystem's root")

const stagingName = ".cairn-power-loss-staging"

// NewPowerLossFS opens the simulated filesystem rooted at root (created if missing), loading
// what is on disk there as the durable state.
func NewPowerLossFS(root string) (*PowerLossFS, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	pl := &PowerLossFS{root: abs, staging: filepath.Join(abs, stagingName), mem: NewMemFS(),
		nodes: map[*memNode]*plState{}}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	if err := syncRealDir(filepath.Dir(abs)); err != nil {
		return nil, err
	}
	// Leftovers of a process killed during a sync were never part of the durable state.
	if err := os.RemoveAll(pl.staging); err != nil {
		return nil, err
	}
	if err := os.Mkdir(pl.staging, 0o755); err != nil {
		return nil, err
	}
	if err := pl.load(pl.mem.root, "", abs); err != nil {
		return nil, fmt.Errorf("powerloss: loading %s: %w", abs, err)
	}
	return pl, nil
}

// load reads the real directory dir into the durable directory node d.
func (pl *PowerLossFS) load(d *memNode, rel, dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	st := &plState{paths: map[string]struct{}{rel: {}}, kids: map[string]*memNode{}}
	pl.nodes[d] = st
	for _, e := range ents {
		name := e.Name()
		if rel == "" && name == stagingName {
			continue
		}
		real, krel := filepath.Join(dir, name), joinRel(rel, name)
		var n *memNode
		switch {
		case e.IsDir():
			n = newDirNode()
			if err := pl.load(n, krel, real); err != nil {
				return err
			}
		case e.Type().IsRegular():
			data, err := os.ReadFile(real)
			if err != nil {
				return err
			}
			fi, err := e.Info()
			if err != nil {
				return err
			}
			n = newDurableFile(data, fi.ModTime())
			pl.nodes[n] = &plState{paths: map[string]struct{}{krel: {}}, written: n.durable}
		default:
			return fmt.Errorf("%s: not a regular file or directory", real)
		}
		d.linkDurable(name, n)
		st.kids[name] = n
	}
	return nil
}

func joinRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

func (pl *PowerLossFS) realPath(rel string) string {
	return filepath.Join(pl.root, filepath.FromSlash(rel))
}

// memPath maps a path of the FS to the MemFS path ("/" is root).
func (pl *PowerLossFS) memPath(op, name string) (string, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return "", &os.PathError{Op: op, Path: name, Err: err}
	}
	rel, err := filepath.Rel(pl.root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", &os.PathError{Op: op, Path: name, Err: ErrOutsideRoot}
	}
	rel = filepath.ToSlash(rel)
	if rel == "." {
		return "/", nil
	}
	if rel == stagingName || strings.HasPrefix(rel, stagingName+"/") {
		return "", &os.PathError{Op: op, Path: name, Err: os.ErrPermission}
	}
	return "/" + rel, nil
}

// outerErr puts the caller's path back into an error MemFS reported with the mapped one.
func outerErr(err error, mp, name string) error {
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Path == mp {
		return &os.PathError{Op: pe.Op, Path: name, Err: pe.Err}
	}
	return err
}

func (pl *PowerLossFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	mp, err := pl.memPath("open", name)
	if err != nil {
		return nil, err
	}
	f, err := pl.mem.OpenFile(mp, flag, perm)
	if err != nil {
		return nil, outerErr(err, mp, name)
	}
	mf := f.(*memFile)
	mf.name = name
	return &plFile{memFile: mf, pl: pl}, nil
}

func (pl *PowerLossFS) Remove(name string) error {
	mp, err := pl.memPath("remove", name)
	if err != nil {
		return err
	}
	return outerErr(pl.mem.Remove(mp), mp, name)
}

func (pl *PowerLossFS) RemoveAll(name string) error {
	mp, err := pl.memPath("removeall", name)
	if err != nil {
		return err
	}
	return outerErr(pl.mem.RemoveAll(mp), mp, name)
}

func (pl *PowerLossFS) Rename(oldname, newname string) error {
	om, err := pl.memPath("rename", oldname)
	if err != nil {
		return err
	}
	nm, err := pl.memPath("rename", newname)
	if err != nil {
		return err
	}
	err = pl.mem.Rename(om, nm)
	var le *os.LinkError
	if errors.As(err, &le) {
		return &os.LinkError{Op: le.Op, Old: oldname, New: newname, Err: le.Err}
	}
	return outerErr(outerErr(err, om, oldname), nm, newname)
}

func (pl *PowerLossFS) MkdirAll(name string, perm os.FileMode) error {
	mp, err := pl.memPath("mkdir", name)
	if err != nil {
		return err
	}
	return outerErr(pl.mem.MkdirAll(mp, perm), mp, name)
}

func (pl *PowerLossFS) ReadDir(name string) ([]string, error) {
	mp, err := pl.memPath("readdir", name)
	if err != nil {
		return nil, err
	}
	names, err := pl.mem.ReadDir(mp)
	return names, outerErr(err, mp, name)
}

func (pl *PowerLossFS) Stat(name string) (os.FileInfo, error) {
	mp, err := pl.memPath("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := pl.mem.Stat(mp)
	if err != nil {
		return nil, outerErr(err, mp, name)
	}
	if mp == "/" {
		fi = memFileInfo{name: filepath.Base(pl.root), dir: true}
	}
	return fi, nil
}

func (pl *PowerLossFS) err() error {
	pl.errMu.Lock()
	defer pl.errMu.Unlock()
	return pl.failed
}

func (pl *PowerLossFS) fail(err error) error {
	pl.errMu.Lock()
	defer pl.errMu.Unlock()
	if pl.failed == nil {
		pl.failed = fmt.Errorf("powerloss: disk mirror failed: %w", err)
	}
	return pl.failed
}

// SyncDir makes the directory's current entries durable, in memory and on disk.
func (pl *PowerLossFS) SyncDir(name string) error {
	pl.hold.wait()
	if err := pl.err(); err != nil {
		return err
	}
	mp, err := pl.memPath("syncdir", name)
	if err != nil {
		return err
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	d, synced, err := pl.mem.syncDir(mp)
	if err != nil {
		return outerErr(err, mp, name)
	}
	st := pl.nodes[d]
	if st == nil {
		// Not durably reachable: its entries go to disk when an entry leading to it does.
		return nil
	}
	if err := pl.reconcile(st, synced); err != nil {
		return pl.fail(err)
	}
	return nil
}

type plMove struct{ from, to string }

// reconcile brings the directory st mirrors, at each of its paths, to the entries synced.
// Caller holds pl.mu exclusively.
func (pl *PowerLossFS) reconcile(st *plState, synced map[string]*memNode) error {
	old := st.kids
	var removed, added []string
	for name, n := range old {
		if synced[name] != n {
			removed = append(removed, name)
		}
	}
	for name, n := range synced {
		if old[name] != n {
			added = append(added, name)
		}
	}
	if len(removed) == 0 && len(added) == 0 {
		return nil
	}
	slices.Sort(removed)
	slices.Sort(added)

	// An entry that moved within the directory is renamed on disk, not rewritten.
	var moves []plMove
	moveSrc := map[string]bool{}
	var fresh []string // added entries whose node must be written out
	for _, to := range added {
		from := ""
		for _, x := range removed {
			if old[x] == synced[to] && !moveSrc[x] {
				from = x
				break
			}
		}
		if from == "" {
			fresh = append(fresh, to)
			continue
		}
		moveSrc[from] = true
		moves = append(moves, plMove{from, to})
	}
	// A destination that is also a source (a swap or a chain) needs a detour via staging.
	chained := false
	for _, m := range moves {
		if moveSrc[m.to] {
			chained = true
		}
	}
	var gone []string // removed entries neither moved nor replaced
	for _, x := range removed {
		if !moveSrc[x] && synced[x] == nil {
			gone = append(gone, x)
		}
	}

	// Index first, so the content written below is the content recorded.
	paths := sortedPaths(st)
	for _, p := range paths {
		for _, x := range removed {
			if !moveSrc[x] {
				pl.unindex(old[x], joinRel(p, x))
			}
		}
		for _, m := range moves {
			pl.reindex(old[m.from], joinRel(p, m.from), joinRel(p, m.to))
		}
		for _, y := range fresh {
			pl.index(synced[y], joinRel(p, y))
		}
	}

	for _, p := range paths {
		dir := pl.realPath(p)
		// present reports the node on disk at name before the moves (nil if none).
		present := func(name string) *memNode {
			if chained && moveSrc[name] {
				return nil // moved to staging first
			}
			return old[name]
		}
		if chained {
			tmp := make([]string, len(moves))
			for i, m := range moves {
				tmp[i] = pl.stagingPath()
				if err := os.Rename(filepath.Join(dir, m.from), tmp[i]); err != nil {
					return err
				}
			}
			for i, m := range moves {
				if err := pl.replace(tmp[i], filepath.Join(dir, m.to), old[m.from], present(m.to)); err != nil {
					return err
				}
			}
		} else {
			for _, m := range moves {
				if err := pl.replace(filepath.Join(dir, m.from), filepath.Join(dir, m.to), old[m.from], present(m.to)); err != nil {
					return err
				}
			}
		}
		for _, y := range fresh {
			tmp := pl.stagingPath()
			if err := pl.writeTree(synced[y], tmp); err != nil {
				return err
			}
			prev := present(y)
			if moveSrc[y] {
				prev = nil // moved away already
			}
			if err := pl.replace(tmp, filepath.Join(dir, y), synced[y], prev); err != nil {
				return err
			}
		}
		for _, x := range gone {
			if err := pl.removeReal(filepath.Join(dir, x), old[x]); err != nil {
				return err
			}
		}
		if err := syncRealDir(dir); err != nil {
			return err
		}
	}
	st.kids = synced
	return nil
}

func sortedPaths(st *plState) []string {
	ps := make([]string, 0, len(st.paths))
	for p := range st.paths {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

func (pl *PowerLossFS) stagingPath() string {
	return filepath.Join(pl.staging, strconv.FormatUint(pl.seq.Add(1), 10))
}

// replace renames src (holding node n) to dst, where prev (nil if none) is on disk. A file
// replacing a file is one atomic rename; a directory on either side takes the old one
// away first.
func (pl *PowerLossFS) replace(src, dst string, n, prev *memNode) error {
	if prev == nil || (!prev.isDir && !n.isDir) {
		return os.Rename(src, dst)
	}
	trash := pl.stagingPath()
	if err := os.Rename(dst, trash); err != nil {
		return err
	}
	if err := os.Rename(src, dst); err != nil {
		return err
	}
	return os.RemoveAll(trash)
}

// removeReal removes node n's tree at real; a directory goes in one rename, so the death of
// the process cannot leave part of it.
func (pl *PowerLossFS) removeReal(real string, n *memNode) error {
	if !n.isDir {
		return os.Remove(real)
	}
	trash := pl.stagingPath()
	if err := os.Rename(real, trash); err != nil {
		return err
	}
	return os.RemoveAll(trash)
}

// index records node n (and, for a directory, its durable subtree) as on disk at rel,
// taking its content from MemFS if it is on disk nowhere else yet. Caller holds pl.mu.
func (pl *PowerLossFS) index(n *memNode, rel string) {
	st := pl.nodes[n]
	if st == nil {
		st = &plState{paths: map[string]struct{}{}}
		if n.isDir {
			st.kids = pl.mem.syncedEntries(n)
		} else {
			st.written = n.durableData()
		}
		pl.nodes[n] = st
	}
	st.paths[rel] = struct{}{}
	for name, k := range st.kids {
		pl.index(k, joinRel(rel, name))
	}
}

// unindex forgets that n's subtree is on disk at rel. Caller holds pl.mu.
func (pl *PowerLossFS) unindex(n *memNode, rel string) {
	st := pl.nodes[n]
	if st == nil {
		return
	}
	delete(st.paths, rel)
	for name, k := range st.kids {
		pl.unindex(k, joinRel(rel, name))
	}
	if len(st.paths) == 0 {
		delete(pl.nodes, n)
	}
}

// reindex records that n's subtree moved on disk from one path to another.
func (pl *PowerLossFS) reindex(n *memNode, from, to string) {
	st := pl.nodes[n]
	if st == nil {
		return
	}
	delete(st.paths, from)
	st.paths[to] = struct{}{}
	for name, k := range st.kids {
		pl.reindex(k, joinRel(from, name), joinRel(to, name))
	}
}

// writeTree writes the indexed content of n at real, which does not exist, and fsyncs it.
func (pl *PowerLossFS) writeTree(n *memNode, real string) error {
	st := pl.nodes[n]
	if !n.isDir {
		return writeRealFile(real, st.written)
	}
	if err := os.Mkdir(real, 0o755); err != nil {
		return err
	}
	for name, k := range st.kids {
		if err := pl.writeTree(k, filepath.Join(real, name)); err != nil {
			return err
		}
	}
	return syncRealDir(real)
}

// syncFile writes the durable content of file node n to every path where it is on disk.
func (pl *PowerLossFS) syncFile(n *memNode) error {
	if err := pl.err(); err != nil {
		return err
	}
	pl.mu.RLock()
	defer pl.mu.RUnlock()
	st := pl.nodes[n]
	if st == nil {
		return nil // its directory entry is not durable: it goes to disk with that
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	cur, old := n.durableData(), st.written
	samePrefix := func(a, b []byte) bool { // b is a prefix of a
		return len(b) == 0 || (len(a) >= len(b) && (&a[0] == &b[0] || bytes.Equal(a[:len(b)], b)))
	}
	for _, p := range sortedPaths(st) {
		real := pl.realPath(p)
		var err error
		switch {
		case samePrefix(cur, old):
			if len(cur) == len(old) {
				return nil
			}
			err = updateRealFile(real, func(f *os.File) error {
				_, err := f.WriteAt(cur[len(old):], int64(len(old)))
				return err
			})
		case samePrefix(old, cur):
			err = updateRealFile(real, func(f *os.File) error { return f.Truncate(int64(len(cur))) })
		default:
			tmp := pl.stagingPath()
			if err = writeRealFile(tmp, cur); err == nil {
				if err = os.Rename(tmp, real); err == nil {
					err = syncRealDir(filepath.Dir(real))
				}
			}
		}
		if err != nil {
			return pl.fail(err)
		}
	}
	st.written = cur
	return nil
}

func writeRealFile(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func updateRealFile(name string, op func(*os.File) error) error {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err = op(f); err == nil {
		err = datasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncRealDir(name string) error { return osFS{}.SyncDir(name) }

// plFile is a MemFS file whose Sync also writes its durable content to disk.
type plFile struct {
	*memFile
	pl *PowerLossFS
}

func (f *plFile) Sync() error {
	f.pl.hold.wait()
	if err := f.memFile.Sync(); err != nil {
		return err
	}
	if f.n.isDir {
		return nil
	}
	return f.pl.syncFile(f.n)
}
