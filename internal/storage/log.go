package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// Log is one partition's log. See the package documentation for the format and the
// concurrency rules. All methods are safe for concurrent use; Append calls are serialized.
type Log struct {
	fs       FS
	dir      string
	interval int64
	now      func() time.Time

	segmentBytes atomic.Int64
	segmentMs    atomic.Int64

	// Lock order: flushMu, then appendMu, then mu, then a segment's ioMu.
	flushMu  sync.Mutex // serializes Flush and the structural operations
	appendMu sync.Mutex // serializes Append (and excludes it from structural operations)
	mu       sync.RWMutex

	// guarded by mu
	segs          []*segment
	runs          []termRun // first entry of each term present in the log
	lso           int64
	flushedIndex  uint64
	flushedOffset int64
	appendedBytes int64 // bytes written by Append since Open (monotonic)
	flushedBytes  int64 // appendedBytes as of the start of the last completed flush
	totalSize     int64
	dirGen        uint64 // bumped on every change to the directory's entries
	truncGen      uint64 // bumped by TruncateSuffix and Reset (compaction notices them)
	closed        bool
	failed        error // sticky: an I/O error left the files in an unknown state

	// guarded by flushMu
	dirSyncedGen uint64

	// recentEnds[i] is the Kafka end offset of the entry at Raft index recentBase+i: the
	// newest entries, contiguous, so EndOffsetAt answers the boundaries Raft moves
	// (commit, majority) without reading the files. Bounded by maxRecentEnds.
	recentBase uint64
	recentEnds []int64

	// guarded by appendMu
	wbuf []byte

	compaction compactState
}

// Open opens (creating if needed) the log in opts.Dir and recovers it: it keeps the
// longest valid prefix of what is on disk, truncating a torn or corrupt tail, and fsyncs
// what survives.
func Open(opts Options) (*Log, error) {
	if opts.FS == nil {
		opts.FS = OSFS()
	}
	if opts.Dir == "" {
		return nil, errors.New("storage: Options.Dir is empty")
	}
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = DefaultSegmentBytes
	}
	if opts.SegmentMs <= 0 {
		opts.SegmentMs = DefaultSegmentMs
	}
	if opts.IndexIntervalBytes <= 0 {
		opts.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l := &Log{
		fs:       opts.FS,
		dir:      filepath.Clean(opts.Dir),
		interval: int64(opts.IndexIntervalBytes),
		now:      opts.Now,
	}
	l.segmentBytes.Store(opts.SegmentBytes)
	l.segmentMs.Store(opts.SegmentMs)
	if err := l.recover(); err != nil {
		for _, s := range l.segs {
			s.f.Close()
		}
		return nil, err
	}
	return l, nil
}

func (l *Log) nowMs() int64 { return l.now().UnixMilli() }

// createSegment creates (or truncates) the file for a new segment and writes its header.
// Not synced.
func (l *Log) createSegment(h segHeader) (*segment, error) {
	f, err := l.fs.OpenFile(segPath(l.dir, h.baseIndex, logSuffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteAt(encodeSegHeader(h), 0); err != nil {
		f.Close()
		return nil, err
	}
	s := newSegment(h, f)
	s.dirty = true
	return s, nil
}

// runsIn returns the term runs that start inside segment s (not the continuation of the
// term before it). Caller holds mu (or owns l).
func (l *Log) runsIn(s *segment) []termRun {
	var out []termRun
	for _, r := range l.runs {
		if r.startIndex >= s.baseIndex && r.startIndex <= s.lastIndex && r.term > s.prevTerm {
			out = append(out, r)
		}
	}
	return out
}

func removeSegmentFiles(fs FS, dir string, base uint64) error {
	for _, suf := range []string{indexSuffix, timeIndexSuffix, logSuffix} {
		if err := fs.Remove(segPath(dir, base, suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// ReadFile reads the whole of name through fs.
func ReadFile(fs FS, name string) ([]byte, error) {
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	if err := readFull(f, b, 0); err != nil {
		return nil, err
	}
	return b, nil
}

// ---- state helpers (caller holds mu, or owns the log during Open) ----

func (l *Log) active() *segment    { return l.segs[len(l.segs)-1] }
func (l *Log) firstIndex() uint64  { return l.segs[0].baseIndex }
func (l *Log) lastIndex() uint64   { return l.active().lastIndex }
func (l *Log) lastTerm() uint64    { return l.active().lastTerm }
func (l *Log) logEndOffset() int64 { return l.active().endOffset }
func (l *Log) prevTerm() uint64    { return l.segs[0].prevTerm }
func (l *Log) usable() error {
	if l.closed {
		return ErrClosed
	}
	if l.failed != nil {
		return fmt.Errorf("storage: log failed earlier: %w", l.failed)
	}
	return nil
}

// fail records a sticky I/O failure. Caller holds mu.
func (l *Log) fail(err error) {
	if l.failed == nil {
		l.failed = err
	}
}

// ---- append ----

// Append adds entries to the end of the log (not durably; see Flush). Entry i must have
// Index LastIndex()+1+i, else ErrNotContiguous and nothing is appended. Append fills in
// BaseOffset, Records and MaxTimestamp of each element of entries. The stored copy of a
// data batch has its baseOffset set to BaseOffset and its partitionLeaderEpoch to Term;
// the caller's Data slices are not modified.
//
// An I/O error while writing leaves the log failed: every later Append and Flush returns
// an error, and the partition must be reopened (Open recovers a valid prefix).
func (l *Log) Append(entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()

	l.mu.RLock()
	if err := l.usable(); err != nil {
		l.mu.RUnlock()
		return err
	}
	seg := l.active()
	lastIndex, lastTerm, leo := seg.lastIndex, seg.lastTerm, seg.endOffset
	l.mu.RUnlock()

	for i := range entries {
		e := &entries[i]
		if e.Index != lastIndex+1+uint64(i) {
			return fmt.Errorf("%w: entry %d has index %d, want %d", ErrNotContiguous, i, e.Index, lastIndex+1+uint64(i))
		}
		if e.Term < lastTerm {
			return fmt.Errorf("%w: index %d term %d after term %d", ErrTermRegression, e.Index, e.Term, lastTerm)
		}
		lastTerm = e.Term
		switch e.Type {
		case EntryData:
			if err := checkBatch(e.Data); err != nil {
				return fmt.Errorf("index %d: %w", e.Index, err)
			}
		case EntryInternal:
		default:
			return fmt.Errorf("%w: index %d has entry type %d", ErrInvalidBatch, e.Index, e.Type)
		}
		if int64(len(e.Data)) > maxEntryLength-entryHeaderSize {
			return fmt.Errorf("%w: index %d payload of %d bytes", ErrInvalidBatch, e.Index, len(e.Data))
		}
	}
	for i := range entries {
		e := &entries[i]
		e.BaseOffset = leo
		if e.Type == EntryData {
			e.Records = recordbatch.Records(e.Data)
			e.MaxTimestamp = recordbatch.MaxTimestamp(e.Data)
		} else {
			e.Records = 0
			e.MaxTimestamp = -1
		}
		leo += int64(e.Records)
	}

	nowMs := l.nowMs()
	segBytes, segMs := l.segmentBytes.Load(), l.segmentMs.Load()
	metas := make([]entryMeta, 0, min(len(entries), 64))
	for i := 0; i < len(entries); {
		// Fill the active segment with as many entries as it takes.
		pos := seg.size
		buf := l.wbuf[:0]
		metas = metas[:0]
		j := i
		for ; j < len(entries); j++ {
			e := &entries[j]
			m := entryMeta{index: e.Index, term: e.Term, typ: e.Type, baseOffset: e.BaseOffset,
				records: e.Records, maxTs: e.MaxTimestamp, size: int64(entryHeaderSize + len(e.Data))}
			nonEmpty := !seg.empty() || j > i
			if nonEmpty && (pos+m.size > segBytes || !seg.fits(pos, &m) ||
				(j == i && !seg.empty() && nowMs-seg.rollBaseMs > segMs)) {
				break
			}
			buf = appendEntry(buf, e)
			metas = append(metas, m)
			pos += m.size
		}
		if j == i {
			var err error
			if seg, err = l.roll(nowMs); err != nil {
				return err
			}
			continue
		}
		l.wbuf = buf
		if _, err := seg.f.WriteAt(buf, seg.size); err != nil {
			l.mu.Lock()
			l.fail(err)
			l.mu.Unlock()
			return fmt.Errorf("storage: write %s: %w", segmentName(seg.baseIndex), err)
		}
		l.mu.Lock()
		wasEmpty := seg.empty()
		p := seg.size
		// appendEntry computed these entries' CRC32Cs from the bytes just written, so they
		// count as checked when they continue the checked part of the segment.
		seg.markChecked(p, p+int64(len(buf)))
		for k := range metas {
			m := &metas[k]
			seg.observe(m, p, l.interval)
			p += m.size
			if n := len(l.runs); n == 0 || l.runs[n-1].term != m.term {
				l.runs = append(l.runs, termRun{term: m.term, startIndex: m.index, startOffset: m.baseOffset})
			}
			l.noteRecentLocked(m.index, m.endOffset())
		}
		if wasEmpty {
			seg.rollBaseMs = nowMs
		}
		seg.dirty = true
		l.appendedBytes += int64(len(buf))
		l.totalSize += int64(len(buf))
		l.mu.Unlock()
		if cap(l.wbuf) > 8<<20 {
			l.wbuf = nil // do not pin a huge buffer
		}
		i = j
	}
	return nil
}

// roll closes the active segment and starts a new one. Caller holds appendMu.
func (l *Log) roll(nowMs int64) (*segment, error) {
	l.mu.RLock()
	old := l.active()
	h := segHeader{baseIndex: old.lastIndex + 1, baseOffset: old.endOffset, prevTerm: old.lastTerm, createdMs: nowMs}
	l.mu.RUnlock()
	s, err := l.createSegment(h)
	if err != nil {
		l.mu.Lock()
		l.fail(err)
		l.mu.Unlock()
		return nil, fmt.Errorf("storage: roll: %w", err)
	}
	l.mu.Lock()
	l.segs = append(l.segs, s)
	l.dirGen++
	l.appendedBytes += s.size
	l.totalSize += s.size
	l.mu.Unlock()
	return s, nil
}

// ---- flush ----

// Flush makes everything appended before it started durable (segment data, index files
// of closed segments, directory entries of new files), then advances FlushedIndex and
// FlushedOffset to that point. It does not hold the log's main lock while syncing, so
// Append and reads proceed; concurrent Flush calls are serialized.
func (l *Log) Flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	return l.flushLocked()
}

type indexJob struct {
	s    *segment
	idx  []byte
	tidx []byte
}

func (l *Log) flushLocked() error {
	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return err
	}
	targetIndex, targetOffset := l.lastIndex(), l.logEndOffset()
	targetBytes := l.appendedBytes
	var syncs []*segment
	var jobs []indexJob
	all := make([]*segment, len(l.segs))
	copy(all, l.segs)
	for i, s := range l.segs {
		if s.dirty {
			syncs = append(syncs, s)
			s.dirty = false
		}
		if i < len(l.segs)-1 && !s.indexWritten {
			// Closed: its content is final; write its indexes once its data is synced.
			jobs = append(jobs, indexJob{s: s, idx: s.encodeIndex(l.runsIn(s)), tidx: s.encodeTimeIndex()})
		}
	}
	dirGen := l.dirGen
	l.mu.Unlock()

	err := func() error {
		for _, s := range syncs {
			if err := s.f.Sync(); err != nil {
				return fmt.Errorf("storage: fsync %s: %w", segmentName(s.baseIndex), err)
			}
		}
		for _, j := range jobs {
			if err := writeFileDurable(l.fs, segPath(l.dir, j.s.baseIndex, indexSuffix), j.idx); err != nil {
				return err
			}
			if err := writeFileDurable(l.fs, segPath(l.dir, j.s.baseIndex, timeIndexSuffix), j.tidx); err != nil {
				return err
			}
		}
		if dirGen != l.dirSyncedGen || len(jobs) > 0 {
			if err := l.fs.SyncDir(l.dir); err != nil {
				return fmt.Errorf("storage: fsync dir %s: %w", l.dir, err)
			}
		}
		return nil
	}()

	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		// After a failed fsync the page cache may have dropped dirty pages: nothing can
		// be claimed durable any more.
		l.fail(err)
		return err
	}
	l.dirSyncedGen = dirGen
	for _, s := range all {
		s.durable = true
	}
	for _, j := range jobs {
		j.s.indexWritten = true
	}
	if targetIndex > l.flushedIndex {
		l.flushedIndex = targetIndex
	}
	if targetOffset > l.flushedOffset {
		l.flushedOffset = targetOffset
	}
	if targetBytes > l.flushedBytes {
		l.flushedBytes = targetBytes
	}
	return nil
}

// ---- getters ----

// FirstIndex is the Raft index of the first entry kept (LastIndex+1 if the log is empty).
func (l *Log) FirstIndex() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.firstIndex()
}

// LastIndex is the Raft index of the last entry (FirstIndex-1 if the log is empty).
func (l *Log) LastIndex() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.lastIndex()
}

// FlushedIndex is the last Raft index known durable.
func (l *Log) FlushedIndex() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.flushedIndex
}

// LastTerm is the term of the last entry (of entry FirstIndex-1 if the log is empty).
func (l *Log) LastTerm() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.lastTerm()
}

// LogStartOffset is the first Kafka offset still readable.
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.lso
}

// LogEndOffset is the next Kafka offset Append will assign.
func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.logEndOffset()
}

// FlushedOffset is the Kafka offset below which all data is durable.
func (l *Log) FlushedOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.flushedOffset
}

// SizeBytes is the total size of the segment files.
func (l *Log) SizeBytes() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.totalSize
}

// UnflushedBytes is the number of bytes appended since the start of the last completed
// Flush.
func (l *Log) UnflushedBytes() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.appendedBytes - l.flushedBytes
}

// SetOptions changes the roll thresholds at run time; a value <= 0 restores the default.
func (l *Log) SetOptions(segmentBytes, segmentMs int64) {
	if segmentBytes <= 0 {
		segmentBytes = DefaultSegmentBytes
	}
	if segmentMs <= 0 {
		segmentMs = DefaultSegmentMs
	}
	l.segmentBytes.Store(segmentBytes)
	l.segmentMs.Store(segmentMs)
}
