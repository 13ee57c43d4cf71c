package storage

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// readable is checked by the read paths: a failed log can still serve what it has.
func (l *Log) readable() error {
	if l.closed {
		return ErrClosed
	}
	return nil
}

// segmentByOffset returns the index in l.segs of the segment whose data holds offset
// (the first segment ending after it), or len(l.segs). Caller holds mu.
func (l *Log) segmentByOffset(offset int64) int {
	return sort.Search(len(l.segs), func(i int) bool { return l.segs[i].endOffset > offset })
}

// segmentByIndex returns the index in l.segs of the segment holding the Raft index.
func (l *Log) segmentByIndex(index uint64) int {
	return sort.Search(len(l.segs), func(i int) bool { return l.segs[i].lastIndex >= index })
}

// pinned is a segment whose file may be read without l.mu: its ioMu is held shared, so
// it cannot be truncated or closed meanwhile. Everything else needed is copied here.
type pinned struct {
	s         *segment
	from      point
	end       int64 // file size to read up to
	endOffset int64
}

// pin finds a segment with pick and pins it; caller holds mu (read), which pin releases.
func (l *Log) pinLocked(i int, from func(*segment) point) pinned {
	s := l.segs[i]
	p := pinned{s: s, from: from(s), end: s.size, endOffset: s.endOffset}
	s.ioMu.RLock()
	l.mu.RUnlock()
	return p
}

func (p pinned) unpin() { p.s.ioMu.RUnlock() }

func corruptAt(s *segment, pos int64) error {
	return fmt.Errorf("%w: segment %s at position %d", ErrCorrupt, segmentName(s.baseIndex), pos)
}

// ReadBatches returns the raw bytes of consecutive data batches starting with the batch
// that contains offset, up to (not including) the first batch whose base offset is >=
// upTo, adding batches while the total stays <= maxBytes; the first batch is included
// even if it alone is larger (KIP-74). Internal entries are skipped. It returns (nil,
// nil) at or beyond upTo or at the log end, and ErrOffsetOutOfRange below the log start
// or beyond the log end. The bytes are a fresh copy owned by the caller. A stored entry
// that fails its CRC32C is never returned: the batches before it are, and a read that
// starts at it gets ErrCorrupt. The entries it verifies count as checked for
// ReadBatchSlices when the read continues the segment's checked part (see segment.checkedTo).
func (l *Log) ReadBatches(offset int64, maxBytes int, upTo int64) ([]byte, error) {
	var out []byte
	err := l.selectBatches(offset, maxBytes, upTo, func(pn pinned, sel *batchSelection) error {
		if out == nil {
			// Sized for the common case; a large fetch grows it as it goes.
			out = make([]byte, 0, min(int64(max(maxBytes, 0)), pn.end-pn.from.pos, 4<<20)+1)
		}
		var err error
		out, err = l.readSegmentBatches(pn, sel, out)
		return err
	})
	if err != nil || len(out) == 0 {
		return nil, err
	}
	return out, nil
}

// batchSelection is the state of one batch read. ReadBatches and ReadBatchSlices both
// decide through it, so that they select exactly the same batches.
type batchSelection struct {
	next     int64 // the first offset still wanted
	maxBytes int
	upTo     int64
	taken    int64 // payload bytes selected so far
	done     bool  // nothing more is to be selected
}

// take decides about the data batch [base, end) of size bytes met next in the log: false
// if it lies before next (skip it) or the read ends before it (done is then set).
func (sel *batchSelection) take(base, end int64, size int64) bool {
	if end <= sel.next {
		return false
	}
	if base >= sel.upTo || (sel.taken > 0 && sel.taken+size > int64(sel.maxBytes)) {
		sel.done = true
		return false
	}
	sel.taken += size
	sel.next = end
	return true
}

// segmentEnd records that a scan went through the whole pinned segment.
func (sel *batchSelection) segmentEnd(pn pinned) { sel.next = max(sel.next, pn.endOffset) }

// selectBatches runs the checks and the segment walk of a batch read (see ReadBatches):
// scan is called with each segment pinned in turn and selects batches from it through sel
// until sel.done or the segment's end. A scan error ends the read; ErrCorrupt after some
// batches were selected does not (those are served, and the next read reports it).
func (l *Log) selectBatches(offset int64, maxBytes int, upTo int64, scan func(pinned, *batchSelection) error) error {
	l.mu.RLock()
	if err := l.readable(); err != nil {
		l.mu.RUnlock()
		return err
	}
	if offset < l.lso || offset > l.logEndOffset() {
		lso, leo := l.lso, l.logEndOffset()
		l.mu.RUnlock()
		return fmt.Errorf("%w: offset %d, log start %d, log end %d", ErrOffsetOutOfRange, offset, lso, leo)
	}
	if offset >= upTo || offset >= l.logEndOffset() {
		l.mu.RUnlock()
		return nil
	}
	sel := batchSelection{next: offset, maxBytes: maxBytes, upTo: upTo}
	for {
		// Holding mu (read); sel.next < upTo and sel.next < log end.
		next := sel.next
		i := l.segmentByOffset(next)
		if i == len(l.segs) || l.segs[i].baseOffset > next || next < l.lso {
			// Only after a concurrent retention or truncation: stop at what is consistent.
			l.mu.RUnlock()
			return nil
		}
		pn := l.pinLocked(i, func(s *segment) point { return s.lookupOffset(next) })
		err := scan(pn, &sel)
		pn.unpin()
		if err != nil {
			if sel.taken > 0 && errors.Is(err, ErrCorrupt) {
				// Serve the intact batches before the damage; the next read, which starts
				// at the damaged entry, reports it.
				return nil
			}
			return err
		}
		if sel.done {
			return nil
		}
		l.mu.RLock()
		if sel.next >= upTo || sel.next >= l.logEndOffset() {
			l.mu.RUnlock()
			return nil
		}
	}
}

func (l *Log) readSegmentBatches(pn pinned, sel *batchSelection, out []byte) ([]byte, error) {
	chunk := min(max(int64(sel.maxBytes)+2*l.interval, 64<<10), 16<<20)
	bp := getReadBuf()
	r := newEntryReader(pn.s.f, pn.from, pn.end, chunk, *bp)
	defer func() {
		// Every entry before r.pos passed its CRC32C check just now, read contiguously from
		// pn.from: file slices may serve them (if that continues the checked part). The
		// segment is still pinned, so no truncation can have cut them meanwhile.
		pn.s.markChecked(pn.from.pos, r.pos)
		*bp = r.buf[:0]
		putReadBuf(bp)
	}()
	for {
		at := r.pos
		e, st, err := r.next()
		if err != nil {
			return out, err
		}
		switch st {
		case readEnd:
			sel.segmentEnd(pn)
			return out, nil
		case readBad:
			// If the entry was checked before, its bytes have changed since (disk or page
			// cache): file slices must stop serving it too.
			pn.s.uncheck(at)
			return out, corruptAt(pn.s, at)
		}
		if e.typ != EntryData {
			continue
		}
		base := recordbatch.BaseOffset(e.payload)
		if sel.take(base, base+int64(recordbatch.Records(e.payload)), int64(len(e.payload))) {
			out = append(out, e.payload...)
		} else if sel.done {
			return out, nil
		}
	}
}

// Entries returns the entries with lo <= Index < hi, stopping before the total size
// (payload plus the 25-byte entry header) would exceed maxBytes, but returning at least
// one entry (raft.Storage semantics). ErrCompacted if lo < FirstIndex, ErrUnavailable if
// hi > LastIndex+1. Data slices are fresh copies.
func (l *Log) Entries(lo, hi uint64, maxBytes uint64) ([]Entry, error) {
	l.mu.RLock()
	if err := l.readable(); err != nil {
		l.mu.RUnlock()
		return nil, err
	}
	if lo < l.firstIndex() {
		l.mu.RUnlock()
		return nil, ErrCompacted
	}
	if hi > l.lastIndex()+1 {
		l.mu.RUnlock()
		return nil, ErrUnavailable
	}
	var ents []Entry
	var total uint64
	next := lo
	for next < hi {
		if next > l.lastIndex() {
			break // truncated meanwhile
		}
		i := l.segmentByIndex(next)
		if i == len(l.segs) || l.segs[i].baseIndex > next {
			break // prefix removed meanwhile
		}
		pn := l.pinLocked(i, func(s *segment) point { return s.lookupIndex(next) })
		done, err := func() (bool, error) {
			defer pn.unpin()
			chunk := int64(1 << 20)
			if maxBytes < 1<<20 {
				chunk = int64(maxBytes) + 2*l.interval
			}
			bp := getReadBuf()
			r := newEntryReader(pn.s.f, pn.from, pn.end, chunk, *bp)
			defer func() { *bp = r.buf[:0]; putReadBuf(bp) }()
			for {
				at, off := r.pos, r.offset
				e, st, err := r.next()
				if err != nil {
					return true, err
				}
				switch st {
				case readEnd:
					return false, nil
				case readBad:
					return true, corruptAt(pn.s, at)
				}
				if e.index < next {
					continue
				}
				if e.index >= hi {
					return true, nil
				}
				size := uint64(len(e.payload)) + entryHeaderSize
				if len(ents) > 0 && total+size > maxBytes {
					return true, nil
				}
				total += size
				m := e.meta(off)
				ent := Entry{Index: e.index, Term: e.term, Type: e.typ, BaseOffset: m.baseOffset,
					Records: m.records, MaxTimestamp: m.maxTs}
				if len(e.payload) > 0 {
					ent.Data = append([]byte(nil), e.payload...)
				}
				ents = append(ents, ent)
				next = e.index + 1
			}
		}()
		if err != nil {
			return nil, err
		}
		if done {
			return ents, nil
		}
		l.mu.RLock()
	}
	l.mu.RUnlock()
	return ents, nil
}

// Term returns the term of the entry at index. It works for FirstIndex-1 (the term of the
// entry before the first kept one); below that it returns ErrCompacted, beyond LastIndex
// ErrUnavailable.
func (l *Log) Term(index uint64) (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	fi := l.firstIndex()
	if index+1 < fi {
		return 0, ErrCompacted
	}
	if index > l.lastIndex() {
		return 0, ErrUnavailable
	}
	if index == fi-1 {
		return l.prevTerm(), nil
	}
	i := sort.Search(len(l.runs), func(i int) bool { return l.runs[i].startIndex > index })
	if i == 0 {
		return 0, fmt.Errorf("%w: no term known for index %d", ErrCorrupt, index)
	}
	return l.runs[i-1].term, nil
}

// EpochEndOffset answers OffsetForLeaderEpoch: the largest term T <= epoch that has
// entries in the log, and the start offset of the first entry with a term above T (the
// log end offset if T is the last term). ok=false if no entry has a term <= epoch.
func (l *Log) EpochEndOffset(epoch uint64) (foundEpoch uint64, endOffset int64, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	i := sort.Search(len(l.runs), func(i int) bool { return l.runs[i].term > epoch })
	if i == 0 {
		return 0, 0, false
	}
	if i < len(l.runs) {
		return l.runs[i-1].term, l.runs[i].startOffset, true
	}
	return l.runs[i-1].term, l.logEndOffset(), true
}

// OffsetForTimestamp returns the first batch at or after the log start whose
// MaxTimestamp >= ts: its base offset (raised to the log start offset if the batch
// straddles it) and its MaxTimestamp. ok=false if there is none (or if the entries to
// search could not be read intact).
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, ok bool) {
	l.mu.RLock()
	if l.readable() != nil {
		l.mu.RUnlock()
		return 0, 0, false
	}
	lso := l.lso
	i := l.segmentByOffset(lso)
	for ; i < len(l.segs); i++ {
		if l.segs[i].maxTs < ts {
			continue
		}
		idx := i
		pn := l.pinLocked(idx, func(s *segment) point { return s.lookupTime(ts) })
		off, mts, found, err := l.scanForTimestamp(pn, ts, lso)
		pn.unpin()
		if err != nil {
			return 0, 0, false
		}
		if found {
			return off, mts, true
		}
		l.mu.RLock()
		// The segment list may have changed while unlocked: continue after the segment
		// just read.
		i = l.segmentByOffset(max(pn.endOffset, lso)) - 1
	}
	l.mu.RUnlock()
	return 0, 0, false
}

func (l *Log) scanForTimestamp(pn pinned, ts, lso int64) (int64, int64, bool, error) {
	bp := getReadBuf()
	r := newEntryReader(pn.s.f, pn.from, pn.end, 64<<10, *bp)
	defer func() { *bp = r.buf[:0]; putReadBuf(bp) }()
	for {
		at := r.pos
		e, st, err := r.next()
		if err != nil {
			return 0, 0, false, err
		}
		switch st {
		case readEnd:
			return 0, 0, false, nil
		case readBad:
			return 0, 0, false, corruptAt(pn.s, at)
		}
		if e.typ != EntryData {
			continue
		}
		base := recordbatch.BaseOffset(e.payload)
		if base+int64(recordbatch.Records(e.payload)) <= lso {
			continue
		}
		if mts := recordbatch.MaxTimestamp(e.payload); mts >= ts {
			return max(base, lso), mts, true, nil
		}
	}
}

// MaxTimestamp returns the largest batch MaxTimestamp in the log and the offset of the
// last record of the (first) batch that has it: base offset + lastOffsetDelta. Kafka's
// MAX_TIMESTAMP names the record with the largest timestamp; the batch's last record is
// what the batch header identifies without decoding records. (-1, -1) if the log holds
// no data batch. Segments whose data lies partly below the log start still count.
func (l *Log) MaxTimestamp() (timestamp int64, offset int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	timestamp, offset = -1, -1
	for _, s := range l.segs {
		if s.maxTs > timestamp {
			timestamp, offset = s.maxTs, s.maxTsOff
		}
	}
	return timestamp, offset
}

// ScanBatches calls fn for every data batch from the one holding LogStartOffset to the
// log end as of the call, in order. The batch bytes are only valid during the call. An
// error from fn stops the scan and is returned.
func (l *Log) ScanBatches(fn func(baseOffset int64, batch []byte) error) error {
	return l.ScanBatchesBelow(math.MaxInt64, fn)
}

// ScanBatchesBelow is ScanBatches, stopping before the batch at or past offset upTo: a
// replica that rebuilds state from what it knows is committed reads no further.
func (l *Log) ScanBatchesBelow(upTo int64, fn func(baseOffset int64, batch []byte) error) error {
	l.mu.RLock()
	if err := l.readable(); err != nil {
		l.mu.RUnlock()
		return err
	}
	next, end := l.lso, min(upTo, l.logEndOffset())
	l.mu.RUnlock()
	for next < end {
		b, err := l.ReadBatches(next, 1<<20, end)
		if err != nil {
			return err
		}
		if len(b) == 0 {
			return nil
		}
		for len(b) > 0 {
			n := int(recordbatch.Size(b))
			batch := b[:n:n]
			if err := fn(recordbatch.BaseOffset(batch), batch); err != nil {
				return err
			}
			next = recordbatch.BaseOffset(batch) + int64(recordbatch.Records(batch))
			b = b[n:]
		}
	}
	return nil
}
