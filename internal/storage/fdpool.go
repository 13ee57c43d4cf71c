package storage

import (
	"container/list"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// # Open files: a budget of descriptors
//
// A broker keeps every segment of every replica open, one descriptor or more per replica,
// and a process may have only RLIMIT_NOFILE descriptors (often 20,000 or less in a
// container, where it cannot be raised): 50,000 replicas would fail with EMFILE. So the
// real filesystem's files hold their descriptor only while they are used, and an idle
// file's descriptor is closed once the process holds more than the budget (half the
// limit, leaving the rest to connections); the next use opens the file again by name.
//
// Reopening by name must reach the same file, so a descriptor is never closed while:
//   - the file is in use (a read, write, sync, truncate or descriptor duplicate running);
//   - it holds writes not yet synced (a descriptor opened after a failed writeback might
//     not report the failure to Sync, and durability rests on Sync's answer);
//   - its name was removed or renamed over, or its directory removed, through this FS
//     (the file is pinned open: only the descriptor still reaches it).
//
// Those descriptors can outnumber the budget: after a mass election, tens of thousands of
// replicas append at once and each segment holds its descriptor until its flusher syncs
// it. So the pool has a ceiling too, nine tenths of the limit (the rest is for sockets
// and directory syncs): an open at the ceiling with nothing idle waits, up to roomWait,
// until a descriptor is released, since past it the process meets EMFILE and the log whose
// write needed the descriptor fails for good. The syncs that release descriptors need no
// new one (a sync uses the descriptor its unsynced writes hold), and a raft flusher syncs
// its segment, releasing that descriptor, before it writes the vote file that may need
// one; should every flusher still wait, the bound ends it.
//
// A file renamed through this FS is reopened under its new name. As a last guard, a
// reopened file must be the same inode as the first open found; if it is not (something
// outside this FS replaced it), the operation fails with errFileReplaced rather than
// reading or writing another file.

// errFileReplaced is returned by an operation on a file whose descriptor was closed for
// the budget and whose name now leads to another file, or to none.
var errFileReplaced = errors.New("storage: a closed file's name no longer leads to it")

type fdPool struct {
	// names serializes, by name (striped), the opens and renames that run outside mu: a
	// fresh open, and a rename that no file of the pool is under. Taken before mu, never
	// while holding it. Without it every open and rename of the process, with its
	// syscall, queued on mu: a broker restarting with thousands of replicas opened them
	// one per rename of some other replica's state file.
	names   [64]sync.Mutex
	mu      sync.Mutex
	budget  int
	ceiling int           // descriptors held beyond which an open waits for one to be released
	room    sync.Cond     // on mu: a descriptor was released (made idle or closed)
	waiting int           // opens waiting on room
	maxWait time.Duration // how long an open waits at the ceiling (roomWait)
	open    int           // descriptors held
	idle    list.List     // *pooledFile with a descriptor, unused, synced, not pinned; front newest
	byName  map[string][]*pooledFile
	byDir   map[string]map[*pooledFile]struct{}
}

func newFDPool(budget int) *fdPool {
	p := &fdPool{budget: max(budget, 16), ceiling: fdCeiling(), maxWait: roomWait, byName: map[string][]*pooledFile{}, byDir: map[string]map[*pooledFile]struct{}{}}
	p.room.L = &p.mu
	return p
}

// defaultPool is the real filesystem's: half of the process's descriptor limit (the Go
// runtime raises the soft limit to the hard one at start).
var defaultPool = newFDPool(fdLimit() / 2)

// roomWait bounds an open's wait at the ceiling; past it the open goes ahead and the
// operating system decides.
const roomWait = 30 * time.Second

func fdLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 1024
	}
	return int(min(rl.Cur, 2<<20))
}

// fdCeiling is nine tenths of the limit, leaving at least 64 descriptors to the rest of
// the process.
func fdCeiling() int {
	limit := fdLimit()
	return max(limit-max(limit/10, 64), 16)
}

// waitRoomLocked makes room for one more descriptor: it closes the oldest idle one when
// the budget is full and, at the ceiling with none idle, waits until one is released or
// roomWait has passed.
func (p *fdPool) waitRoomLocked() {
	p.evictLocked(1)
	if p.open < p.ceiling {
		return
	}
	deadline := time.Now().Add(p.maxWait)
	timer := time.AfterFunc(p.maxWait, func() {
		p.mu.Lock()
		p.room.Broadcast()
		p.mu.Unlock()
	})
	defer timer.Stop()
	for p.open >= p.ceiling && time.Now().Before(deadline) {
		p.waiting++
		p.room.Wait()
		p.waiting--
		p.evictLocked(1)
	}
}

// releasedLocked wakes the opens waiting for room: a descriptor became idle or closed.
func (p *fdPool) releasedLocked() {
	if p.waiting > 0 {
		p.room.Broadcast()
	}
}

// isOutOfDescriptors reports whether err is the process's or the system's descriptor
// limit.
func isOutOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// evictIdleLocked closes every idle descriptor, the answer to an open that found the
// process out of descriptors below the ceiling (other parts of the process hold them);
// it reports whether it closed any.
func (p *fdPool) evictIdleLocked() bool {
	n := p.open
	b := p.budget
	p.budget = 0
	p.evictLocked(0)
	p.budget = b
	return p.open < n
}

// pooledFile is a File of the real filesystem under the budget. Fields are guarded by
// the pool's mu.
// fileIdentity is what fileID compares.
type fileIdentity struct {
	dev, ino uint64
	gen      uint32
}

type pooledFile struct {
	p       *fdPool
	name    string
	flag    int // the flags a reopen uses: the first open's, without O_CREATE, O_EXCL, O_TRUNC
	f       *os.File
	id      fileIdentity
	users   int
	started uint64 // writes and truncates begun
	done    uint64 // writes and truncates ended
	synced  uint64 // writes covered by a successful Sync: ended before it began
	pinned  bool
	closed  bool
	elem    *list.Element // in p.idle
	pos     int64         // Write's position
}

func (p *fdPool) openFile(name string, flag int, perm os.FileMode) (File, error) {
	if flag&os.O_APPEND != 0 {
		// Appending files would lose their position semantics across a reopen; nothing in
		// the log opens one, so they simply keep their descriptor.
		f, err := os.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		return &osFile{f: f}, nil
	}
	p.mu.Lock()
	p.waitRoomLocked()
	p.open++ // the descriptor about to be opened counts now
	p.mu.Unlock()
	defer p.lockNames(filepath.Dir(name))()
	f, err := os.OpenFile(name, flag, perm)
	if isOutOfDescriptors(err) {
		p.mu.Lock()
		freed := p.evictIdleLocked()
		p.mu.Unlock()
		if freed {
			f, err = os.OpenFile(name, flag, perm)
		}
	}
	var id fileIdentity
	if err == nil {
		if id, err = fileID(f); err != nil {
			f.Close()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.open--
		p.releasedLocked()
		return nil, err
	}
	pf := &pooledFile{p: p, name: name, flag: flag &^ (os.O_CREATE | os.O_EXCL | os.O_TRUNC), f: f, id: id}
	p.indexLocked(pf)
	p.makeIdleLocked(pf)
	return pf, nil
}

// lockNames locks the stripes of names (in order, each once) and returns their unlock.
func (p *fdPool) lockNames(names ...string) func() {
	var held [4]int
	idx := held[:0]
	for _, n := range names {
		h := fnv.New32a()
		h.Write([]byte(n))
		if i := int(h.Sum32() % uint32(len(p.names))); !slices.Contains(idx, i) {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	for _, i := range idx {
		p.names[i].Lock()
	}
	return func() {
		for _, i := range idx {
			p.names[i].Unlock()
		}
	}
}

func (p *fdPool) indexLocked(pf *pooledFile) {
	p.byName[pf.name] = append(p.byName[pf.name], pf)
	dir := filepath.Dir(pf.name)
	m := p.byDir[dir]
	if m == nil {
		m = map[*pooledFile]struct{}{}
		p.byDir[dir] = m
	}
	m[pf] = struct{}{}
}

func (p *fdPool) unindexLocked(pf *pooledFile) {
	fs := p.byName[pf.name]
	for i, x := range fs {
		if x == pf {
			fs = append(fs[:i], fs[i+1:]...)
			break
		}
	}
	if len(fs) == 0 {
		delete(p.byName, pf.name)
	} else {
		p.byName[pf.name] = fs
	}
	dir := filepath.Dir(pf.name)
	if m := p.byDir[dir]; m != nil {
		delete(m, pf)
		if len(m) == 0 {
			delete(p.byDir, dir)
		}
	}
}

// makeIdleLocked puts pf among the closable descriptors if it qualifies.
func (p *fdPool) makeIdleLocked(pf *pooledFile) {
	if pf.elem != nil || pf.f == nil || pf.users > 0 || pf.pinned || pf.closed || pf.synced != pf.started {
		return
	}
	pf.elem = p.idle.PushFront(pf)
	p.releasedLocked()
}

func (p *fdPool) leaveIdleLocked(pf *pooledFile) {
	if pf.elem != nil {
		p.idle.Remove(pf.elem)
		pf.elem = nil
	}
}

// evictLocked closes the oldest idle descriptors until room more fit in the budget (or
// none is idle: the budget is then exceeded rather than an operation refused).
func (p *fdPool) evictLocked(room int) {
	for p.open+room > p.budget {
		e := p.idle.Back()
		if e == nil {
			return
		}
		pf := e.Value.(*pooledFile)
		p.idle.Remove(e)
		pf.elem = nil
		pf.f.Close()
		pf.f = nil
		p.open--
	}
}

// pinLocked makes pf keep its descriptor for good, opening it again first if it was
// closed (its name is about to stop leading to it).
func (p *fdPool) pinLocked(pf *pooledFile) error {
	if pf.closed {
		return nil
	}
	if pf.f == nil {
		if err := p.reopenLocked(pf, false); err != nil {
			return err
		}
	}
	pf.pinned = true
	p.leaveIdleLocked(pf)
	return nil
}

// reopenLocked opens pf's descriptor again. wait says it may wait for room at the ceiling
// (not while a rename holds names).
func (p *fdPool) reopenLocked(pf *pooledFile, wait bool) error {
	if wait {
		p.waitRoomLocked()
		if pf.closed || pf.f != nil {
			return nil // closed, or opened again by another user, while this one waited
		}
	} else {
		p.evictLocked(1)
	}
	f, err := os.OpenFile(pf.name, pf.flag, 0)
	if isOutOfDescriptors(err) && p.evictIdleLocked() {
		f, err = os.OpenFile(pf.name, pf.flag, 0)
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s", errFileReplaced, pf.name)
		}
		return err
	}
	id, err := fileID(f)
	if err != nil {
		f.Close()
		return err
	}
	if id != pf.id {
		f.Close()
		return fmt.Errorf("%w: %s", errFileReplaced, pf.name)
	}
	pf.f = f
	p.open++
	return nil
}

// acquire returns pf's descriptor, opening it again if the budget closed it, and keeps it
// open until release. write says the operation changes the file.
func (pf *pooledFile) acquire(write bool) (*os.File, error) {
	p := pf.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if pf.closed {
		return nil, os.ErrClosed
	}
	if pf.f == nil {
		if err := p.reopenLocked(pf, true); err != nil {
			return nil, err
		}
		if pf.closed {
			return nil, os.ErrClosed
		}
	}
	p.leaveIdleLocked(pf)
	pf.users++
	if write {
		pf.started++
	}
	return pf.f, nil
}

// release ends an acquire: of a write if write, of a successful Sync covering synced
// writes if synced is not zero.
func (pf *pooledFile) release(write bool, synced uint64) {
	p := pf.p
	p.mu.Lock()
	defer p.mu.Unlock()
	pf.users--
	if write {
		pf.done++
	}
	if synced > pf.synced {
		pf.synced = synced
	}
	p.makeIdleLocked(pf)
	p.evictLocked(0)
}

func (pf *pooledFile) ReadAt(b []byte, off int64) (int, error) {
	f, err := pf.acquire(false)
	if err != nil {
		return 0, err
	}
	defer pf.release(false, 0)
	return f.ReadAt(b, off)
}

func (pf *pooledFile) WriteAt(b []byte, off int64) (int, error) {
	f, err := pf.acquire(true)
	if err != nil {
		return 0, err
	}
	defer pf.release(true, 0)
	return f.WriteAt(b, off)
}

// Write writes at the file's own position, which Cairn's files keep in the File (a
// reopened descriptor would start at 0). Writes to one File must not run concurrently.
func (pf *pooledFile) Write(b []byte) (int, error) {
	f, err := pf.acquire(true)
	if err != nil {
		return 0, err
	}
	defer pf.release(true, 0)
	n, err := f.WriteAt(b, pf.pos)
	pf.pos += int64(n)
	return n, err
}

func (pf *pooledFile) Truncate(size int64) error {
	f, err := pf.acquire(true)
	if err != nil {
		return err
	}
	defer pf.release(true, 0)
	return f.Truncate(size)
}

func (pf *pooledFile) Sync() error {
	p := pf.p
	p.mu.Lock()
	covers := pf.done
	if pf.f == nil && !pf.closed && pf.synced == pf.started {
		// Closed for the budget, so every write to it was synced: nothing to reopen for.
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	f, err := pf.acquire(false)
	if err != nil {
		return err
	}
	if err := datasync(f); err != nil {
		pf.release(false, 0)
		return err
	}
	pf.release(false, covers)
	return nil
}

func (pf *pooledFile) Size() (int64, error) {
	f, err := pf.acquire(false)
	if err != nil {
		return 0, err
	}
	defer pf.release(false, 0)
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// dupSysFile duplicates the descriptor (see ReadBatchSlices).
func (pf *pooledFile) dupSysFile() (*os.File, error) {
	f, err := pf.acquire(false)
	if err != nil {
		return nil, err
	}
	defer pf.release(false, 0)
	return dupFile(f)
}

func (pf *pooledFile) Close() error {
	p := pf.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if pf.closed {
		return os.ErrClosed
	}
	pf.closed = true
	p.leaveIdleLocked(pf)
	p.unindexLocked(pf)
	if pf.f == nil {
		return nil
	}
	err := pf.f.Close()
	pf.f = nil
	p.open--
	p.releasedLocked()
	return err
}

// beforeRemove pins the files a removal of name takes away (the file itself, or a
// directory's files).
func (p *fdPool) beforeRemove(name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, pf := range p.byName[name] {
		errs = append(errs, p.pinLocked(pf))
	}
	for pf := range p.byDir[name] {
		errs = append(errs, p.pinLocked(pf))
	}
	return errors.Join(errs...)
}

// rename renames oldname to newname, with the files open under newname pinned (they are
// replaced) and those open under oldname reopened under newname from then on. It holds
// the pool for the call, so that no reopen sees the name half-moved; a rename that no
// file of the pool is under (the usual one: a state file's replacement, written and
// closed just before) holds only the names, so that no open of them runs meanwhile.
func (p *fdPool) rename(oldname, newname string) error {
	defer p.lockNames(filepath.Dir(oldname), filepath.Dir(newname), oldname, newname)()
	p.mu.Lock()
	if len(p.byName[oldname]) == 0 && len(p.byName[newname]) == 0 && len(p.byDir[oldname]) == 0 && len(p.byDir[newname]) == 0 {
		p.mu.Unlock()
		return os.Rename(oldname, newname)
	}
	defer p.mu.Unlock()
	for _, pf := range p.byName[newname] {
		if err := p.pinLocked(pf); err != nil {
			return err
		}
	}
	for pf := range p.byDir[oldname] {
		if err := p.pinLocked(pf); err != nil { // a directory's files keep their old path
			return err
		}
	}
	if err := os.Rename(oldname, newname); err != nil {
		return err
	}
	for _, pf := range slices.Clone(p.byName[oldname]) {
		p.unindexLocked(pf)
		pf.name = newname
		p.indexLocked(pf)
	}
	return nil
}
