package storage

import (
	"hash/crc32"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// offEntry is one sparse offset-index point: the entry at pos starts at Kafka offset
// base+relOff and has Raft index baseIndex+relIdx.
type offEntry struct {
	relOff uint32
	relIdx uint32
	pos    uint32
}

// timeEntry is one time-index point: every entry up to and including the one at pos
// (an offset-index point) has a timestamp <= ts, and the record with timestamp ts is at
// offset base+relOff.
type timeEntry struct {
	ts     int64
	relOff uint32
	pos    uint32
}

// termRun records the first entry of each term in the log.
type termRun struct {
	term        uint64
	startIndex  uint64
	startOffset int64
}

type segment struct {
	// immutable after creation
	baseIndex  uint64
	baseOffset int64
	prevTerm   uint64
	createdMs  int64
	cleanedMs  int64 // see segHeader; a compacted segment is a new *segment
	f          File

	// ioMu is held (shared) by readers doing file I/O without the log's mu, and
	// exclusively by whoever truncates or closes the file.
	ioMu sync.RWMutex

	// checkedTo is a file position: every byte before it belongs to an entry whose
	// CRC32C this process computed (it wrote the entry) or verified (it read the entry).
	// File slices (sendfile) serve only bytes below it, so nothing the process has not
	// checked leaves it unchecked. It is an atomic, not guarded by Log.mu, because the
	// copy read path advances it while holding only ioMu shared. It only grows, from the
	// entry boundary it holds, except that truncation (holding ioMu exclusively, so no
	// reader moves it meanwhile) lowers it to the new size, and a read that finds a bad
	// entry below it lowers it to that entry. See markChecked and uncheck.
	checkedTo atomic.Int64

	// guarded by Log.mu (written only by the holder of Log.appendMu or a structural op)
	size          int64 // bytes, header included
	lastIndex     uint64
	lastTerm      uint64
	endOffset     int64
	maxTs         int64
	maxTsOff      int64 // offset of the last record of the batch holding maxTs
	offIdx        []offEntry
	timeIdx       []timeEntry
	bytesSinceIdx int64
	rollBaseMs    int64 // when the first entry was appended (or the header's created time)

	dirty        bool // written or truncated since the last fsync was started
	durable      bool // the file has been fsynced and its directory entry synced
	indexWritten bool // .index/.timeindex on disk describe this (closed) segment
}

// newSegment returns a segment holding no entry yet: checked up to its header's end,
// since there is nothing else to check. Whoever adopts or writes entries advances it.
func newSegment(h segHeader, f File) *segment {
	s := &segment{
		baseIndex:  h.baseIndex,
		baseOffset: h.baseOffset,
		prevTerm:   h.prevTerm,
		createdMs:  h.createdMs,
		cleanedMs:  h.cleanedMs,
		f:          f,
		size:       segHeaderSize,
		lastIndex:  h.baseIndex - 1,
		lastTerm:   h.prevTerm,
		endOffset:  h.baseOffset,
		maxTs:      -1,
		maxTsOff:   -1,
		rollBaseMs: h.createdMs,
	}
	s.checkedTo.Store(segHeaderSize)
	return s
}

// markChecked records that the entries in [from, to) were checked (their CRC32C verified
// or computed by this process). The watermark moves to to only if it lies in [from, to):
// the checked bytes must continue what was checked before, or a hole would be trusted.
func (s *segment) markChecked(from, to int64) {
	for {
		c := s.checkedTo.Load()
		if c < from || c >= to {
			return
		}
		if s.checkedTo.CompareAndSwap(c, to) {
			return
		}
	}
}

// uncheck lowers the watermark to pos if it is above: the bytes from pos on are gone
// (truncation) or no longer what was checked (a read found a bad entry there).
func (s *segment) uncheck(pos int64) {
	for {
		c := s.checkedTo.Load()
		if c <= pos {
			return
		}
		if s.checkedTo.CompareAndSwap(c, pos) {
			return
		}
	}
}

func (s *segment) empty() bool { return s.lastIndex < s.baseIndex }

// fits reports whether an entry may go into this segment without overflowing the
// 32-bit relative fields of its indexes.
func (s *segment) fits(pos int64, m *entryMeta) bool {
	return pos+m.size <= math.MaxUint32 &&
		m.endOffset()-s.baseOffset <= math.MaxUint32 &&
		m.index-s.baseIndex <= math.MaxUint32
}

// observe accounts for the entry m written at pos: indexes, boundaries, timestamps.
func (s *segment) observe(m *entryMeta, pos int64, interval int64) {
	addPoint := s.bytesSinceIdx >= interval
	if addPoint {
		s.offIdx = append(s.offIdx, offEntry{
			relOff: uint32(m.baseOffset - s.baseOffset),
			relIdx: uint32(m.index - s.baseIndex),
			pos:    uint32(pos),
		})
		s.bytesSinceIdx = 0
	}
	s.bytesSinceIdx += m.size
	if m.typ == EntryData && m.maxTs > s.maxTs {
		s.maxTs = m.maxTs
		s.maxTsOff = m.endOffset() - 1
	}
	if addPoint && s.maxTs >= 0 && (len(s.timeIdx) == 0 || s.maxTs > s.timeIdx[len(s.timeIdx)-1].ts) {
		s.timeIdx = append(s.timeIdx, timeEntry{ts: s.maxTs, relOff: uint32(s.maxTsOff - s.baseOffset), pos: uint32(pos)})
	}
	s.lastIndex = m.index
	s.lastTerm = m.term
	s.endOffset = m.endOffset()
	s.size = pos + m.size
}

// point is a place to start scanning: the entry at pos has Raft index and Kafka offset.
type point struct {
	pos    int64
	index  uint64
	offset int64
}

func (s *segment) start() point {
	return point{pos: segHeaderSize, index: s.baseIndex, offset: s.baseOffset}
}

func (s *segment) pointAt(i int) point {
	if i < 0 {
		return s.start()
	}
	e := s.offIdx[i]
	return point{pos: int64(e.pos), index: s.baseIndex + uint64(e.relIdx), offset: s.baseOffset + int64(e.relOff)}
}

// lookupOffset returns the last index point whose entry starts at or before offset; the
// entry holding offset is at or after it.
func (s *segment) lookupOffset(offset int64) point {
	rel := offset - s.baseOffset
	i := sort.Search(len(s.offIdx), func(i int) bool { return int64(s.offIdx[i].relOff) > rel })
	return s.pointAt(i - 1)
}

// lookupIndex returns the last index point at or before the Raft index.
func (s *segment) lookupIndex(index uint64) point {
	rel := index - s.baseIndex
	i := sort.Search(len(s.offIdx), func(i int) bool { return uint64(s.offIdx[i].relIdx) > rel })
	return s.pointAt(i - 1)
}

// lookupTime returns a point from which the first batch with MaxTimestamp >= ts can be
// found by scanning forward a bounded distance.
func (s *segment) lookupTime(ts int64) point {
	j := sort.Search(len(s.timeIdx), func(i int) bool { return s.timeIdx[i].ts >= ts })
	// Every entry up to the offset-index point before timeIdx[j] has timestamps < ts
	// (otherwise a time entry >= ts would have been written there or earlier).
	var limit uint32 = math.MaxUint32
	if j < len(s.timeIdx) {
		limit = s.timeIdx[j].pos
	}
	i := sort.Search(len(s.offIdx), func(i int) bool { return s.offIdx[i].pos >= limit })
	return s.pointAt(i - 1)
}

// truncateIndexes drops index points at or after pos and returns the last index point
// before pos, from which the segment's tail up to pos must be re-observed. The segment's
// timestamp maximum is reset to what the kept time entries prove.
func (s *segment) truncateIndexes(pos int64) point {
	i := sort.Search(len(s.offIdx), func(i int) bool { return int64(s.offIdx[i].pos) >= pos })
	s.offIdx = s.offIdx[:i:i]
	j := sort.Search(len(s.timeIdx), func(i int) bool { return int64(s.timeIdx[i].pos) >= pos })
	s.timeIdx = s.timeIdx[:j:j]
	if j > 0 {
		t := s.timeIdx[j-1]
		s.maxTs, s.maxTsOff = t.ts, s.baseOffset+int64(t.relOff)
	} else {
		s.maxTs, s.maxTsOff = -1, -1
	}
	p := s.pointAt(i - 1)
	// Re-observing starts at p: the entry at p is itself an index point already recorded,
	// so start with a counter that does not add it again.
	s.bytesSinceIdx = 0
	s.lastIndex = p.index - 1
	s.endOffset = p.offset
	s.size = p.pos
	return p
}

// ---- index files ----

const (
	idxMagic      = "CAIRNIDX"
	tidxMagic     = "CAIRNTIX"
	idxVersion    = 1
	idxHeaderSize = 88
	tidxHeader    = 32
)

// encodeIndex serializes the offset index and summary of a closed segment; runs are the
// term runs that start inside the segment.
func (s *segment) encodeIndex(runs []termRun) []byte {
	n := idxHeaderSize + 24*len(runs) + 12*len(s.offIdx) + 4
	b := make([]byte, n)
	copy(b[0:8], idxMagic)
	be.PutUint32(b[8:12], idxVersion)
	be.PutUint32(b[12:16], uint32(len(s.offIdx)))
	be.PutUint32(b[16:20], uint32(len(runs)))
	be.PutUint64(b[24:32], uint64(s.size))
	be.PutUint64(b[32:40], s.lastIndex)
	be.PutUint64(b[40:48], s.lastTerm)
	be.PutUint64(b[48:56], uint64(s.endOffset))
	be.PutUint64(b[56:64], uint64(s.maxTs))
	be.PutUint64(b[64:72], uint64(s.maxTsOff))
	be.PutUint64(b[72:80], s.baseIndex)
	be.PutUint64(b[80:88], uint64(s.baseOffset))
	p := idxHeaderSize
	for _, r := range runs {
		be.PutUint64(b[p:], r.term)
		be.PutUint64(b[p+8:], r.startIndex)
		be.PutUint64(b[p+16:], uint64(r.startOffset))
		p += 24
	}
	for _, e := range s.offIdx {
		be.PutUint32(b[p:], e.relOff)
		be.PutUint32(b[p+4:], e.relIdx)
		be.PutUint32(b[p+8:], e.pos)
		p += 12
	}
	be.PutUint32(b[p:], crc32.Checksum(b[:p], castagnoli))
	return b
}

func (s *segment) encodeTimeIndex() []byte {
	n := tidxHeader + 16*len(s.timeIdx) + 4
	b := make([]byte, n)
	copy(b[0:8], tidxMagic)
	be.PutUint32(b[8:12], idxVersion)
	be.PutUint32(b[12:16], uint32(len(s.timeIdx)))
	be.PutUint64(b[16:24], uint64(s.size))
	be.PutUint64(b[24:32], s.baseIndex)
	p := tidxHeader
	for _, e := range s.timeIdx {
		be.PutUint64(b[p:], uint64(e.ts))
		be.PutUint32(b[p+8:], e.relOff)
		be.PutUint32(b[p+12:], e.pos)
		p += 16
	}
	be.PutUint32(b[p:], crc32.Checksum(b[:p], castagnoli))
	return b
}

// loadIndexes adopts index files that describe this segment's file of size fileSize.
// It returns the term runs starting in the segment, or ok=false if the files are not
// trustworthy (the caller then rescans the segment).
func (s *segment) loadIndexes(idx, tidx []byte, fileSize int64) (runs []termRun, ok bool) {
	if len(idx) < idxHeaderSize+4 || string(idx[0:8]) != idxMagic || be.Uint32(idx[8:12]) != idxVersion {
		return nil, false
	}
	nOff, nRuns := int(be.Uint32(idx[12:16])), int(be.Uint32(idx[16:20]))
	if int64(len(idx)) != int64(idxHeaderSize)+24*int64(nRuns)+12*int64(nOff)+4 {
		return nil, false
	}
	end := len(idx) - 4
	if be.Uint32(idx[end:]) != crc32.Checksum(idx[:end], castagnoli) {
		return nil, false
	}
	if int64(be.Uint64(idx[24:32])) != fileSize || be.Uint64(idx[72:80]) != s.baseIndex ||
		int64(be.Uint64(idx[80:88])) != s.baseOffset {
		return nil, false
	}
	if len(tidx) < tidxHeader+4 || string(tidx[0:8]) != tidxMagic || be.Uint32(tidx[8:12]) != idxVersion {
		return nil, false
	}
	nTime := int(be.Uint32(tidx[12:16]))
	if int64(len(tidx)) != int64(tidxHeader)+16*int64(nTime)+4 {
		return nil, false
	}
	tend := len(tidx) - 4
	if be.Uint32(tidx[tend:]) != crc32.Checksum(tidx[:tend], castagnoli) ||
		int64(be.Uint64(tidx[16:24])) != fileSize || be.Uint64(tidx[24:32]) != s.baseIndex {
		return nil, false
	}
	lastIndex, lastTerm := be.Uint64(idx[32:40]), be.Uint64(idx[40:48])
	endOffset := int64(be.Uint64(idx[48:56]))
	if lastIndex < s.baseIndex-1 || endOffset < s.baseOffset || lastTerm < s.prevTerm ||
		(lastIndex < s.baseIndex && (endOffset != s.baseOffset || lastTerm != s.prevTerm)) {
		return nil, false
	}
	p := idxHeaderSize
	prevTerm := s.prevTerm
	prevIdx, prevOff := s.baseIndex-1, s.baseOffset
	for range nRuns {
		r := termRun{term: be.Uint64(idx[p:]), startIndex: be.Uint64(idx[p+8:]), startOffset: int64(be.Uint64(idx[p+16:]))}
		p += 24
		if r.term <= prevTerm || r.startIndex <= prevIdx || r.startIndex > lastIndex ||
			r.startOffset < prevOff || r.startOffset > endOffset || r.term > lastTerm {
			return nil, false
		}
		prevTerm, prevIdx, prevOff = r.term, r.startIndex, r.startOffset
		runs = append(runs, r)
	}
	if prevTerm != lastTerm {
		return nil, false
	}
	offIdx := make([]offEntry, nOff)
	var lastPos uint32
	for i := range offIdx {
		e := offEntry{relOff: be.Uint32(idx[p:]), relIdx: be.Uint32(idx[p+4:]), pos: be.Uint32(idx[p+8:])}
		p += 12
		if int64(e.pos) < segHeaderSize || int64(e.pos) >= fileSize || e.pos <= lastPos ||
			s.baseIndex+uint64(e.relIdx) > lastIndex || s.baseOffset+int64(e.relOff) > endOffset {
			return nil, false
		}
		lastPos = e.pos
		offIdx[i] = e
	}
	timeIdx := make([]timeEntry, nTime)
	p = tidxHeader
	for i := range timeIdx {
		timeIdx[i] = timeEntry{ts: int64(be.Uint64(tidx[p:])), relOff: be.Uint32(tidx[p+8:]), pos: be.Uint32(tidx[p+12:])}
		p += 16
		if int64(timeIdx[i].pos) >= fileSize {
			return nil, false
		}
	}
	s.offIdx, s.timeIdx = offIdx, timeIdx
	s.size = fileSize
	s.lastIndex, s.lastTerm, s.endOffset = lastIndex, lastTerm, endOffset
	s.maxTs, s.maxTsOff = int64(be.Uint64(idx[56:64])), int64(be.Uint64(idx[64:72]))
	s.indexWritten = true
	return runs, true
}

// ---- reading entries ----

const (
	readOK = iota
	readEnd
	readBad // torn or corrupt entry at the reader's position
)

// entryReader walks the entries of a segment file from a known point, reading in chunks
// and checking each entry's CRC32C and structure. Payloads alias its buffer and are valid
// until the next call.
type entryReader struct {
	f      File
	pos    int64 // file position of the next entry
	end    int64 // read limit (exclusive)
	index  uint64
	offset int64 // Kafka offset the next entry starts at
	chunk  int64
	buf    []byte
	bufPos int64
}

func newEntryReader(f File, p point, end int64, chunk int64, buf []byte) *entryReader {
	if chunk < 4096 {
		chunk = 4096
	}
	return &entryReader{f: f, pos: p.pos, end: end, index: p.index, offset: p.offset, chunk: chunk, buf: buf[:0]}
}

// window returns buffered bytes [pos, pos+n), reading from the file if needed.
func (r *entryReader) window(n int64) ([]byte, error) {
	if r.pos >= r.bufPos && r.pos+n <= r.bufPos+int64(len(r.buf)) {
		o := r.pos - r.bufPos
		return r.buf[o : o+n], nil
	}
	want := max(n, r.chunk)
	if want > r.end-r.pos {
		want = r.end - r.pos
	}
	if int64(cap(r.buf)) >= want {
		r.buf = r.buf[:want]
	} else {
		r.buf = make([]byte, want)
	}
	r.bufPos = r.pos
	if err := readFull(r.f, r.buf, r.pos); err != nil {
		r.buf = r.buf[:0]
		return nil, err
	}
	return r.buf[:n], nil
}

// next decodes the entry at the reader's position. Status readBad means the bytes there
// are not a valid entry (torn, corrupt, out of sequence); err is an I/O error.
func (r *entryReader) next() (parsedEntry, int, error) {
	if r.pos >= r.end {
		return parsedEntry{}, readEnd, nil
	}
	if r.end-r.pos < entryHeaderSize {
		return parsedEntry{}, readBad, nil
	}
	h, err := r.window(4)
	if err != nil {
		return parsedEntry{}, readBad, err
	}
	total, ok := entryLength(h, r.end-r.pos)
	if !ok {
		return parsedEntry{}, readBad, nil
	}
	ent, err := r.window(total)
	if err != nil {
		return parsedEntry{}, readBad, err
	}
	p, ok := validEntry(ent, r.offset)
	if !ok || p.index != r.index {
		return parsedEntry{}, readBad, nil
	}
	r.pos += total
	r.index++
	if p.typ == EntryData {
		r.offset += int64(recordbatch.Records(p.payload))
	}
	return p, readOK, nil
}

// readBufPool recycles reader buffers for the read paths whose results are copied out.
var readBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}

func getReadBuf() *[]byte { return readBufPool.Get().(*[]byte) }

func putReadBuf(b *[]byte) {
	if cap(*b) > 16<<20 {
		return
	}
	readBufPool.Put(b)
}
