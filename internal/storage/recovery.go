package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// recovery is one pass of Open over a log directory (see Recovery in the package
// documentation). Its phases run in a fixed order, because a crash during Open must
// leave a directory that the next Open recovers the same way: nothing is removed before
// the segments that decide it have been read, and nothing is called durable before the
// fsyncs that make it so.
type recovery struct {
	l *Log

	ckpt    int64 // the checkpointed log start, if hasCkpt
	hasCkpt bool

	drop       []uint64   // segments to remove: those after a corrupt point
	rescanned  []*segment // segments whose content was read, so must be fsynced
	dirChanged bool       // an entry was added to or removed from the directory
}

// recover keeps the longest valid prefix of what is on disk and makes it durable. It
// fills l's segments, term runs, log start and flushed boundaries; on an error the
// caller closes whatever segments l holds.
func (l *Log) recover() error {
	r := &recovery{l: l}
	bases, err := r.listSegments()
	if err != nil {
		return err
	}
	if r.ckpt, r.hasCkpt, err = readCheckpoint(l.fs, l.dir); err != nil {
		return err
	}
	if len(bases) == 0 {
		return r.startFresh()
	}
	hdrs, err := r.readHeaders(bases)
	if err != nil {
		return err
	}
	if hdrs, err = r.removeBelowCheckpoint(hdrs); err != nil {
		return err
	}
	if err := r.adoptSegments(hdrs); err != nil {
		return err
	}
	if err := r.removeDropped(); err != nil {
		return err
	}
	if err := r.removeActiveIndexes(); err != nil {
		return err
	}
	if err := r.makeDurable(); err != nil {
		return err
	}
	return r.restoreBoundaries()
}

// classifyDirEntries sorts the names in a log directory into the segments (by base
// index, ascending) and the stray files: temporary files, which are leftovers of an
// interrupted write, and index files without their segment, which describe nothing.
// Other names are left alone, so that a file Cairn does not know is never removed.
func classifyDirEntries(names []string) (bases []uint64, stray []string) {
	haveLog := map[uint64]bool{}
	for _, n := range names {
		if b, ok := parseSegmentName(n, logSuffix); ok {
			bases = append(bases, b)
			haveLog[b] = true
		} else if strings.HasSuffix(n, tmpSuffix) {
			stray = append(stray, n)
		}
	}
	for _, n := range names {
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if b, ok := parseSegmentName(n, suf); ok && !haveLog[b] {
				stray = append(stray, n)
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, stray
}

// listSegments creates the directory if needed, removes its stray files and returns the
// base indexes of its segments, ascending. Strays go before anything is read: none of
// them is ever part of the log.
func (r *recovery) listSegments() ([]uint64, error) {
	fs, dir := r.l.fs, r.l.dir
	if err := mkdirAllDurable(fs, dir); err != nil {
		return nil, fmt.Errorf("storage: create %s: %w", dir, err)
	}
	names, err := fs.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: list %s: %w", dir, err)
	}
	bases, stray := classifyDirEntries(names)
	for _, n := range stray {
		if err := fs.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		r.dirChanged = true
	}
	return bases, nil
}

// startFresh gives a directory without segments one empty, durable segment, so that the
// log always has an active segment whose header says where it stands. A checkpoint
// without any segment is a leftover of an interrupted Delete; it describes nothing.
func (r *recovery) startFresh() error {
	l := r.l
	if r.hasCkpt {
		if err := l.fs.Remove(filepath.Join(l.dir, checkpointName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	s, err := l.createSegment(segHeader{baseIndex: 1, baseOffset: 0, prevTerm: 0, createdMs: l.nowMs()})
	if err != nil {
		return err
	}
	if err := s.f.Sync(); err != nil {
		s.f.Close()
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		s.f.Close()
		return err
	}
	s.durable = true
	l.segs = []*segment{s}
	l.totalSize = s.size
	return nil
}

// readHeaders opens every segment and reads its header, before any content: the chain
// of base offsets lets removeBelowCheckpoint recognise segments wholly below the
// checkpointed log start without reading them. A segment whose header is unreadable
// ends the log there; for the first segment that leaves nothing to stand on, so it is
// ErrCorrupt.
func (r *recovery) readHeaders(bases []uint64) ([]*segment, error) {
	var hdrs []*segment
	for i, base := range bases {
		s, ok, err := r.l.openSegment(base)
		if err != nil {
			closeSegments(hdrs)
			return nil, err
		}
		if !ok {
			if i == 0 {
				return nil, fmt.Errorf("%w: header of first segment %s", ErrCorrupt, segPath(r.l.dir, base, logSuffix))
			}
			r.drop = append(r.drop, bases[i:]...)
			break
		}
		hdrs = append(hdrs, s)
	}
	return hdrs, nil
}

// removeBelowCheckpoint finishes a deletion below the log start that a crash
// interrupted: the checkpoint is written before such segments are removed, so a segment
// whose successor starts at or below it holds nothing readable. It returns the segments
// that remain.
func (r *recovery) removeBelowCheckpoint(hdrs []*segment) ([]*segment, error) {
	skip := 0
	if r.hasCkpt {
		for skip+1 < len(hdrs) && hdrs[skip+1].baseOffset <= r.ckpt && hdrs[skip].baseOffset < r.ckpt {
			skip++
		}
	}
	for _, s := range hdrs[:skip] {
		s.f.Close()
		if err := removeSegmentFiles(r.l.fs, r.l.dir, s.baseIndex); err != nil {
			closeSegments(hdrs[skip:])
			return nil, err
		}
		r.dirChanged = true
	}
	return hdrs[skip:], nil
}

// adoptSegments walks the segments oldest first and adds to the log each one that
// continues the one before it (index, offset and term all follow on). A closed segment
// is adopted from its index files when they describe it exactly, which spares reading
// it; otherwise, and always for the last segment, every entry is read and checked. The
// first segment that does not follow on, or that has a bad entry, ends the log: its
// torn tail is truncated and every later segment is marked for removal.
func (r *recovery) adoptSegments(hdrs []*segment) error {
	l := r.l
	for i, s := range hdrs {
		if i > 0 {
			prev := l.segs[len(l.segs)-1]
			if s.baseIndex != prev.lastIndex+1 || s.baseOffset != prev.endOffset || s.prevTerm != prev.lastTerm {
				r.dropSegments(hdrs[i:])
				break
			}
		}
		fileSize, err := s.f.Size()
		if err != nil {
			closeSegments(hdrs[i:])
			return err
		}
		if i < len(hdrs)-1 && r.adoptFromIndexes(s, fileSize) {
			continue
		}
		good, err := l.scanSegment(s, fileSize)
		if err != nil {
			closeSegments(hdrs[i:])
			return err
		}
		l.segs = append(l.segs, s)
		l.totalSize += s.size
		r.rescanned = append(r.rescanned, s)
		if good < fileSize {
			if err := s.f.Truncate(good); err != nil {
				closeSegments(hdrs[i+1:])
				return err
			}
			r.dropSegments(hdrs[i+1:])
			break
		}
	}
	return nil
}

// adoptFromIndexes adds closed segment s to the log from its index files, if they
// describe it exactly, and reports whether it did.
func (r *recovery) adoptFromIndexes(s *segment, fileSize int64) bool {
	l := r.l
	runs, ok := l.loadSegmentIndexes(s, fileSize)
	if !ok {
		return false
	}
	if len(l.segs) == 0 && !s.empty() && (len(runs) == 0 || runs[0].startIndex > s.baseIndex) {
		// The segment starts by continuing the term before it, which its own index
		// does not record as a run.
		l.runs = append(l.runs, termRun{term: s.prevTerm, startIndex: s.baseIndex, startOffset: s.baseOffset})
	}
	l.runs = append(l.runs, runs...)
	l.segs = append(l.segs, s)
	l.totalSize += s.size
	return true
}

// dropSegments closes segments that will not be part of the log and marks them for
// removal.
func (r *recovery) dropSegments(ss []*segment) {
	for _, s := range ss {
		r.drop = append(r.drop, s.baseIndex)
	}
	closeSegments(ss)
}

// removeDropped removes what follows a corrupt point, newest first, so that a crash part
// way leaves a log that still ends at a valid prefix.
func (r *recovery) removeDropped() error {
	sort.Slice(r.drop, func(i, j int) bool { return r.drop[i] > r.drop[j] })
	for _, b := range r.drop {
		if err := removeSegmentFiles(r.l.fs, r.l.dir, b); err != nil {
			return err
		}
		r.dirChanged = true
	}
	return nil
}

// removeActiveIndexes removes index files of the last segment: it is the active one,
// appends will change it, and index files exist only for closed segments.
func (r *recovery) removeActiveIndexes() error {
	l := r.l
	last := l.segs[len(l.segs)-1]
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		err := l.fs.Remove(segPath(l.dir, last.baseIndex, suf))
		if err == nil {
			r.dirChanged = true
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	last.indexWritten = false
	return nil
}

// makeDurable fsyncs what survived, since it may have been in the page cache only (a
// process crash rather than a power loss), then writes the index files closed segments
// lack, and syncs the directory if its entries changed. Only then is every segment
// durable, so that Open can report FlushedIndex = LastIndex.
func (r *recovery) makeDurable() error {
	l := r.l
	for _, s := range r.rescanned {
		if err := s.f.Sync(); err != nil {
			return err
		}
	}
	for _, s := range l.segs[:len(l.segs)-1] {
		if !s.indexWritten {
			if err := l.writeIndexFiles(s, l.runsIn(s)); err != nil {
				return err
			}
			s.indexWritten = true
			r.dirChanged = true
		}
	}
	if r.dirChanged {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
	}
	for _, s := range l.segs {
		s.durable = true
	}
	return nil
}

// restoreBoundaries sets the log start (the larger of the first segment's base offset
// and the checkpoint) and the flushed boundaries (everything, now that makeDurable ran).
func (r *recovery) restoreBoundaries() error {
	l := r.l
	l.lso = l.segs[0].baseOffset
	if r.hasCkpt && r.ckpt > l.lso {
		l.lso = r.ckpt
	}
	if leo := l.logEndOffset(); l.lso > leo {
		// A truncation below the log start was interrupted before it rewrote the
		// checkpoint: follow the log end, durably, so later appends stay readable.
		l.lso = leo
		if err := WriteFileAtomic(l.fs, filepath.Join(l.dir, checkpointName), encodeCheckpoint(leo)); err != nil {
			return err
		}
	}
	l.flushedIndex = l.lastIndex()
	l.flushedOffset = l.logEndOffset()
	return nil
}

func closeSegments(ss []*segment) {
	for _, s := range ss {
		s.f.Close()
	}
}

// openSegment opens a segment file and reads its header. ok=false if the header is
// missing or corrupt (the file is then closed).
func (l *Log) openSegment(base uint64) (*segment, bool, error) {
	f, err := l.fs.OpenFile(segPath(l.dir, base, logSuffix), os.O_RDWR, 0)
	if err != nil {
		return nil, false, err
	}
	hb := make([]byte, segHeaderSize)
	if err := readFull(f, hb, 0); err != nil {
		f.Close()
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, false, nil
		}
		return nil, false, err
	}
	h, ok := decodeSegHeader(hb)
	if !ok || h.baseIndex != base {
		f.Close()
		return nil, false, nil
	}
	return newSegment(h, f), true, nil
}

// loadSegmentIndexes adopts a closed segment's index files if they describe it exactly.
func (l *Log) loadSegmentIndexes(s *segment, fileSize int64) ([]termRun, bool) {
	idx, err1 := ReadFile(l.fs, segPath(l.dir, s.baseIndex, indexSuffix))
	tidx, err2 := ReadFile(l.fs, segPath(l.dir, s.baseIndex, timeIndexSuffix))
	if err1 != nil || err2 != nil {
		return nil, false
	}
	return s.loadIndexes(idx, tidx, fileSize)
}

// scanSegment reads every entry of s, validating it and rebuilding the in-memory indexes
// and term runs. It returns the position of the first byte that is not part of a valid
// entry (fileSize if the whole file is good).
func (l *Log) scanSegment(s *segment, fileSize int64) (int64, error) {
	// A pooled buffer: a broker opening tens of thousands of replicas scans one segment
	// each, and a fresh megabyte per scan was most of its garbage.
	bp := getReadBuf()
	r := newEntryReader(s.f, s.start(), fileSize, 1<<20, *bp)
	defer func() { *bp = r.buf[:0]; putReadBuf(bp) }()
	lastTerm := s.prevTerm
	for {
		p, st, err := r.next()
		if err != nil {
			return 0, err
		}
		if st != readOK || p.term < lastTerm {
			return s.size, nil
		}
		pos := s.size
		m := p.meta(s.endOffset)
		if !s.empty() && !s.fits(pos, &m) {
			return s.size, nil
		}
		s.observe(&m, pos, l.interval)
		// The reader verified this entry's CRC32C: file slices may serve it.
		s.markChecked(pos, s.size)
		if n := len(l.runs); n == 0 || l.runs[n-1].term != p.term {
			l.runs = append(l.runs, termRun{term: p.term, startIndex: p.index, startOffset: m.baseOffset})
		}
		lastTerm = p.term
	}
}

func (l *Log) writeIndexFiles(s *segment, runs []termRun) error {
	if err := writeFileDurable(l.fs, segPath(l.dir, s.baseIndex, indexSuffix), s.encodeIndex(runs)); err != nil {
		return err
	}
	return writeFileDurable(l.fs, segPath(l.dir, s.baseIndex, timeIndexSuffix), s.encodeTimeIndex())
}
