package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// TruncateSuffix removes every entry with Index >= fromIndex (Raft conflict resolution):
// later segments are removed, the segment holding fromIndex is truncated, and the log end
// and flushed boundaries move back. The result is durable before it returns. A fromIndex
// beyond LastIndex is a no-op; below FirstIndex it is ErrCompacted.
func (l *Log) TruncateSuffix(fromIndex uint64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()

	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return err
	}
	if fromIndex > l.lastIndex() {
		l.mu.Unlock()
		return nil
	}
	if fromIndex < l.firstIndex() {
		l.mu.Unlock()
		return ErrCompacted
	}
	l.truncGen++
	k := l.segmentByIndex(fromIndex)
	s := l.segs[k]
	removed := append([]*segment(nil), l.segs[k+1:]...)
	for _, r := range removed {
		r.ioMu.Lock() // wait for readers of the files about to go
		r.ioMu.Unlock()
		l.totalSize -= r.size
	}
	l.segs = l.segs[:k+1]
	if len(removed) > 0 {
		l.dirGen++
	}

	s.ioMu.Lock()
	err := l.truncateSegment(s, fromIndex)
	s.ioMu.Unlock()
	if err != nil {
		l.fail(err)
		l.mu.Unlock()
		return err
	}
	// Terms and boundaries.
	l.dropRecentLocked(fromIndex)
	for len(l.runs) > 0 && l.runs[len(l.runs)-1].startIndex >= fromIndex {
		l.runs = l.runs[:len(l.runs)-1]
	}
	if n := len(l.runs); n > 0 {
		s.lastTerm = l.runs[n-1].term
	} else {
		s.lastTerm = s.prevTerm
	}
	if l.flushedIndex > s.lastIndex {
		l.flushedIndex = s.lastIndex
	}
	if l.flushedOffset > s.endOffset {
		l.flushedOffset = s.endOffset
	}
	lsoMoved := l.lso > s.endOffset
	if lsoMoved {
		l.lso = s.endOffset
	}
	lso := l.lso
	l.mu.Unlock()

	for _, r := range removed {
		r.f.Close()
	}
	// Remove later segments newest first: a crash part way leaves a prefix of the chain.
	for i := len(removed) - 1; i >= 0; i-- {
		if err := removeSegmentFiles(l.fs, l.dir, removed[i].baseIndex); err != nil {
			return l.failWith(err)
		}
	}
	if err := l.flushLocked(); err != nil {
		return err
	}
	if lsoMoved {
		// Truncated below the log start: the persisted log start must follow, or a
		// restart would put it beyond the log end of the new entries.
		if err := WriteFileAtomic(l.fs, filepath.Join(l.dir, checkpointName), encodeCheckpoint(lso)); err != nil {
			return l.failWith(err)
		}
	}
	return nil
}

func (l *Log) failWith(err error) error {
	l.mu.Lock()
	l.fail(err)
	l.mu.Unlock()
	return err
}

// truncateSegment cuts segment s before the entry fromIndex. Caller holds mu and s.ioMu.
func (l *Log) truncateSegment(s *segment, fromIndex uint64) error {
	if s.indexWritten {
		// The segment becomes the active one; its index files would be stale. Their
		// removal must be durable before the file shrinks, so that a crash can never pair
		// them with a file that was truncated and then grew back to the same size.
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if err := l.fs.Remove(segPath(l.dir, s.baseIndex, suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
		s.indexWritten = false
	}
	oldSize := s.size
	// Find where entry fromIndex starts.
	p := s.lookupIndex(fromIndex)
	truncPos := p.pos
	if p.index < fromIndex {
		r := newEntryReader(s.f, p, oldSize, l.interval+64<<10, nil)
		for r.index < fromIndex {
			at := r.pos
			_, st, err := r.next()
			if err != nil {
				return err
			}
			if st != readOK {
				return corruptAt(s, at)
			}
		}
		truncPos = r.pos
	}
	// Drop the index points at or after it and re-observe the entries between the last
	// kept point and it, which restores the segment's boundaries and largest timestamp.
	q := s.truncateIndexes(truncPos)
	r := newEntryReader(s.f, q, truncPos, l.interval+64<<10, nil)
	for r.index < fromIndex {
		at, off := r.pos, r.offset
		e, st, err := r.next()
		if err != nil {
			return err
		}
		if st != readOK {
			return corruptAt(s, at)
		}
		m := e.meta(off)
		s.observe(&m, at, l.interval)
	}
	// Entries appended from here on must be checked (written) again before being served
	// as file slices. No reader moves the watermark meanwhile: the caller holds ioMu.
	s.uncheck(s.size)
	if err := s.f.Truncate(s.size); err != nil {
		return err
	}
	l.totalSize -= oldSize - s.size
	s.dirty = true
	return nil
}

// AdvanceLogStart moves the log start offset up to offset (DeleteRecords, retention),
// removes closed segments that lie wholly below it and persists it. Smaller values are a
// no-op; an offset beyond the log end is ErrOffsetOutOfRange. FirstIndex becomes the first
// entry of the first remaining segment.
func (l *Log) AdvanceLogStart(offset int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.RLock()
	err := l.usable()
	lso, leo := l.lso, l.logEndOffset()
	l.mu.RUnlock()
	if err != nil {
		return err
	}
	if offset <= lso {
		return nil
	}
	if offset > leo {
		return fmt.Errorf("%w: log start %d beyond log end %d", ErrOffsetOutOfRange, offset, leo)
	}
	return l.advanceTo(offset, 0)
}

// advanceTo persists the log start offset (after a flush, so that it never exceeds what
// is durable and every segment header is durable), then drops the first n closed segments
// (or, with n == 0, every closed segment wholly below the offset). Caller holds flushMu.
func (l *Log) advanceTo(offset int64, n int) error {
	if err := l.flushLocked(); err != nil {
		return err
	}
	if err := WriteFileAtomic(l.fs, filepath.Join(l.dir, checkpointName), encodeCheckpoint(offset)); err != nil {
		return l.failWith(fmt.Errorf("storage: write log start checkpoint: %w", err))
	}
	l.mu.Lock()
	if offset > l.lso {
		l.lso = offset
	}
	if n == 0 {
		n = l.countBelow(l.lso)
	}
	victims := l.dropPrefix(n)
	l.mu.Unlock()
	return l.removeSegments(victims)
}

// countBelow counts the leading closed, durable segments that lie wholly below offset
// (every offset they hold is < offset; a segment of internal entries only, at offset X,
// lies below offset iff X < offset). Caller holds mu.
func (l *Log) countBelow(offset int64) int {
	n := 0
	for n < len(l.segs)-1 {
		s := l.segs[n]
		if !(s.endOffset <= offset && s.baseOffset < offset) || !s.durable || !l.segs[n+1].durable {
			break
		}
		n++
	}
	return n
}

// dropPrefix takes the first n segments out of the log and returns them; the caller
// closes and removes their files. Caller holds mu.
func (l *Log) dropPrefix(n int) []*segment {
	if n <= 0 {
		return nil
	}
	if n > len(l.segs)-1 {
		n = len(l.segs) - 1 // never the active segment
	}
	victims := append([]*segment(nil), l.segs[:n]...)
	for _, s := range victims {
		s.ioMu.Lock() // wait for readers
		s.ioMu.Unlock()
		l.totalSize -= s.size
	}
	l.segs = append([]*segment(nil), l.segs[n:]...)
	first := l.segs[0]
	fi := first.baseIndex
	// Term runs: keep those from fi on; the run covering fi is clamped to start there.
	k := 0
	for k < len(l.runs) && l.runs[k].startIndex < fi {
		k++
	}
	runs := l.runs[k:]
	if k > 0 && (len(runs) == 0 || runs[0].startIndex > fi) && fi <= l.lastIndex() {
		c := l.runs[k-1]
		c.startIndex, c.startOffset = fi, first.baseOffset
		runs = append([]termRun{c}, runs...)
	}
	l.runs = append([]termRun(nil), runs...)
	if l.lso < first.baseOffset {
		l.lso = first.baseOffset
	}
	l.dirGen++
	return victims
}

// removeSegments closes and deletes the files of segments already taken out of the log,
// oldest first, then syncs the directory. Caller holds flushMu.
func (l *Log) removeSegments(victims []*segment) error {
	if len(victims) == 0 {
		return nil
	}
	for _, s := range victims {
		s.f.Close()
	}
	for _, s := range victims {
		if err := removeSegmentFiles(l.fs, l.dir, s.baseIndex); err != nil {
			return l.failWith(err)
		}
	}
	l.mu.RLock()
	gen := l.dirGen
	l.mu.RUnlock()
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.failWith(err)
	}
	l.dirSyncedGen = gen
	return nil
}

// EnforceRetention deletes closed segments, oldest first, while the oldest one's largest
// timestamp is older than now-retentionMs, or while deleting it still leaves at least
// retentionBytes in the log (Kafka's rule: the log never shrinks below retention.bytes
// by retention, and exceeds it by less than one segment). -1 (any negative value) means
// unlimited. The active segment is never deleted. The log start offset advances to the
// first remaining segment and is persisted; the new log start offset is returned. A
// segment without data batches is dated by its creation time.
func (l *Log) EnforceRetention(retentionMs, retentionBytes int64) (int64, error) {
	return l.EnforceRetentionUpTo(retentionMs, retentionBytes, math.MaxUint64)
}

// EnforceRetentionUpTo is EnforceRetention that removes no segment holding an entry above
// maxIndex (a Raft replica passes its applied index: entries raft may still read stay).
func (l *Log) EnforceRetentionUpTo(retentionMs, retentionBytes int64, maxIndex uint64) (int64, error) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.RLock()
	if err := l.usable(); err != nil {
		l.mu.RUnlock()
		return 0, err
	}
	n := l.retentionVictims(retentionMs, retentionBytes)
	for n > 0 && l.segs[n-1].lastIndex > maxIndex {
		n--
	}
	lso := l.lso
	var newStart int64
	if n > 0 {
		newStart = max(lso, l.segs[n].baseOffset)
	}
	l.mu.RUnlock()
	if n == 0 {
		return lso, nil
	}
	if err := l.advanceTo(newStart, n); err != nil {
		return 0, err
	}
	return l.LogStartOffset(), nil
}

// retentionVictims counts the leading closed segments retention deletes. Caller holds mu.
func (l *Log) retentionVictims(retentionMs, retentionBytes int64) int {
	now := l.nowMs()
	size := l.totalSize
	n := 0
	for n < len(l.segs)-1 {
		s := l.segs[n]
		ts := s.maxTs
		if ts < 0 {
			ts = s.createdMs
		}
		expired := retentionMs >= 0 && now-ts > retentionMs
		tooBig := retentionBytes >= 0 && size-s.size >= retentionBytes
		if !expired && !tooBig {
			break
		}
		size -= s.size
		n++
	}
	return n
}

// Reset discards the whole log and starts it again empty, as after installing a Raft
// snapshot: FirstIndex becomes nextIndex, LastIndex nextIndex-1, LastTerm (and
// Term(nextIndex-1)) prevTerm, and LogStartOffset = LogEndOffset = nextOffset. Durable
// before it returns. A crash part way leaves either a prefix-truncated or emptied version
// of the old log or the new one.
func (l *Log) Reset(nextIndex, prevTerm uint64, nextOffset int64) error {
	if nextIndex == 0 || nextOffset < 0 {
		return fmt.Errorf("storage: Reset(%d, %d, %d): invalid position", nextIndex, prevTerm, nextOffset)
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return err
	}
	old := l.segs
	l.mu.Unlock()
	// Readers may go on reading the old segments until the swap below: their files are
	// unlinked but stay open until then.
	for _, s := range old {
		if err := removeSegmentFiles(l.fs, l.dir, s.baseIndex); err != nil {
			return l.failWith(err)
		}
	}
	s, err := l.createSegment(segHeader{baseIndex: nextIndex, baseOffset: nextOffset, prevTerm: prevTerm, createdMs: l.nowMs()})
	if err == nil {
		err = s.f.Sync()
	}
	if err == nil {
		err = WriteFileAtomic(l.fs, filepath.Join(l.dir, checkpointName), encodeCheckpoint(nextOffset))
	}
	if err != nil {
		if s != nil {
			s.f.Close()
		}
		return l.failWith(err)
	}
	s.dirty, s.durable = false, true
	l.mu.Lock()
	for _, o := range old {
		o.ioMu.Lock()
	}
	l.segs = []*segment{s}
	l.truncGen++
	l.runs = nil
	l.recentEnds = l.recentEnds[:0]
	l.lso = nextOffset
	l.flushedIndex = nextIndex - 1
	l.flushedOffset = nextOffset
	l.totalSize = s.size
	l.flushedBytes = l.appendedBytes
	l.dirGen++
	l.dirSyncedGen = l.dirGen
	for _, o := range old {
		o.f.Close()
		o.ioMu.Unlock()
	}
	l.mu.Unlock()
	return nil
}

// Close flushes and closes the log's files. Later calls return nil; other methods return
// ErrClosed (getters keep returning the last values).
func (l *Log) Close() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.RLock()
	closed, failed := l.closed, l.failed
	l.mu.RUnlock()
	if closed {
		return nil
	}
	var err error
	if failed == nil {
		err = l.flushLocked()
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, s := range l.segs {
		s.ioMu.Lock()
		if cerr := s.f.Close(); err == nil {
			err = cerr
		}
		s.ioMu.Unlock()
	}
	return err
}

// Delete closes the log and removes its directory (topic deletion), durably.
func (l *Log) Delete() error {
	_ = l.Close() // a failed final flush does not matter: the files are going
	if err := l.fs.RemoveAll(l.dir); err != nil {
		return err
	}
	return l.fs.SyncDir(filepath.Dir(l.dir))
}
