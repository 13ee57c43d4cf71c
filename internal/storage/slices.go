package storage

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// ErrNoFileSlices reports that a read cannot be answered with file slices: the segment
// files are not OS files (MemFS, PowerLossFS), no descriptor could be duplicated, or a
// batch to serve has not been checked by this process yet (errUnchecked). ReadBatches
// answers the same read.
var ErrNoFileSlices = errors.New("storage: segment files cannot be served as file slices")

// errUnchecked is ErrNoFileSlices for a read that would serve bytes of an entry whose
// CRC32C this process has not checked: ReadBatches must answer it, checking the entries
// (and so letting the next read of them be answered with slices). It is a fixed value,
// so a fallback costs no allocation.
var errUnchecked = fmt.Errorf("%w: a batch lies beyond what this process has checked", ErrNoFileSlices)

// sysFiler is implemented by a File backed by an OS file, whose descriptor can be
// duplicated and handed to the kernel (sendfile) instead of reading the bytes.
type sysFiler interface {
	dupSysFile() (*os.File, error)
}

// FileSlice is Len bytes of File from position Pos: one stored batch.
type FileSlice struct {
	File *os.File
	Pos  int64
	Len  int64
}

// BatchSlices is a read answered as file ranges. Its files are private duplicates of the
// segments' descriptors, so the ranges stay readable after the segments are closed,
// deleted by retention or replaced by compaction; Release closes them.
type BatchSlices struct {
	Slices []FileSlice
	Bytes  int64 // sum of the slices' lengths
	files  []*os.File
}

// Release closes the duplicated descriptors; the slices are unusable afterwards. It is
// safe on the zero value and to call twice.
func (b *BatchSlices) Release() {
	for _, f := range b.files {
		f.Close()
	}
	*b = BatchSlices{}
}

// ReadBatchSlices selects exactly the batches ReadBatches(offset, maxBytes, upTo) would
// return, with the same errors, but answers with the file range of each batch instead of
// its bytes, so they can be sent with sendfile(2) without passing through user space.
// Only entry headers and the first 27 bytes of each batch header are read to find the
// entries; the structural checks (entry length, index sequence, entry type, batch length,
// magic, offsets) apply, and only data entries are ever returned.
//
// The payloads are not read, so their CRC32C cannot be verified here. Instead a byte is
// served as a slice only after this process checked or wrote the entry holding it: each
// segment keeps a watermark (checkedTo) below which every entry's CRC32C was computed by
// an Append or compaction of this process, or verified by Open's recovery scan or by a
// ReadBatches that read on from the checked part. If any selected batch ends beyond it,
// the whole read fails with an error wrapping ErrNoFileSlices; ReadBatches, which the
// caller then uses, verifies those entries and advances the watermark, so the next read
// of them gets slices. In the steady state (a consumer reading what was appended, or
// reading on from where a copy read started checking) every read is slices; after a
// restart, a closed segment trusted from its index is copied until read from its start
// up to the batches wanted. Damage that happens after the check (the page cache or the
// disk beneath it changing checked bytes) is outside what this path sees, as in Kafka,
// where the consumer checks each batch's own CRC; once a ReadBatches finds it, slices
// stop serving the damaged entry.
//
// It also returns ErrNoFileSlices when the segment files are not OS files. The caller
// must Release the result.
func (l *Log) ReadBatchSlices(offset int64, maxBytes int, upTo int64) (BatchSlices, error) {
	var out BatchSlices
	err := l.selectBatches(offset, maxBytes, upTo, func(pn pinned, sel *batchSelection) error {
		return l.sliceSegmentBatches(pn, sel, &out)
	})
	if err != nil {
		out.Release()
		return BatchSlices{}, err
	}
	return out, nil
}

// sliceSegmentBatches is readSegmentBatches without the payloads. The segment's
// descriptor is duplicated, while the segment is pinned, before its first slice.
func (l *Log) sliceSegmentBatches(pn pinned, sel *batchSelection, out *BatchSlices) error {
	sf, ok := pn.s.f.(sysFiler)
	if !ok {
		return ErrNoFileSlices
	}
	hb := hdrBufPool.Get().(*[hdrWindow]byte)
	defer hdrBufPool.Put(hb)
	h := headerScanner{f: pn.s.f, pos: pn.from.pos, end: pn.end, index: pn.from.index, offset: pn.from.offset, buf: hb[:]}
	var dup *os.File
	for {
		at := h.pos
		e, st, err := h.next()
		if err != nil {
			return err
		}
		switch st {
		case readEnd:
			sel.segmentEnd(pn)
			return nil
		case readBad:
			return corruptAt(pn.s, at)
		}
		if e.typ != EntryData {
			continue
		}
		if !sel.take(e.base, e.base+int64(e.records), e.size) {
			if sel.done {
				return nil
			}
			continue
		}
		if h.pos > pn.s.checkedTo.Load() {
			// The entry (ending at h.pos) was neither written nor verified by this process.
			return errUnchecked
		}
		if dup == nil {
			if dup, err = sf.dupSysFile(); err != nil {
				return errors.Join(ErrNoFileSlices, err)
			}
			out.files = append(out.files, dup)
		}
		out.Slices = append(out.Slices, FileSlice{File: dup, Pos: at + entryHeaderSize, Len: e.size})
		out.Bytes += e.size
	}
}

// hdrWindow is how much the header scanner reads at a time while entries are small
// (hdrSmallEntry or less): one read then serves the headers of many entries, where a read
// per entry would cost a system call per small batch. After a larger entry it reads only
// the next header, so larger payloads are not read at all.
const (
	hdrWindow     = 16 << 10
	hdrSmallEntry = 1 << 10
	hdrPeekSize   = entryHeaderSize + recordbatch.HeadSize
)

var hdrBufPool = sync.Pool{New: func() any { return new([hdrWindow]byte) }}

// slicedEntry is what the header scanner learns about one entry.
type slicedEntry struct {
	typ     EntryType
	base    int64 // data: the batch's base offset
	records int32 // data: lastOffsetDelta+1
	size    int64 // payload bytes
}

// headerScanner walks a segment's entries like entryReader, from entry headers alone.
type headerScanner struct {
	f      File
	pos    int64 // file position of the next entry
	end    int64
	index  uint64 // Raft index the next entry must have
	offset int64  // Kafka offset the next entry starts at
	buf    []byte
	win    []byte // buffered bytes from winPos
	winPos int64
	large  bool // the last data entry was not small: read just the next header
}

// peek returns the bytes [pos, pos+n) with n <= hdrPeekSize, fewer at the read limit.
func (h *headerScanner) peek(n int64) ([]byte, error) {
	n = min(n, h.end-h.pos)
	if h.pos >= h.winPos && h.pos+n <= h.winPos+int64(len(h.win)) {
		o := h.pos - h.winPos
		return h.win[o : o+n], nil
	}
	want := int64(hdrWindow)
	if h.large {
		want = hdrPeekSize
	}
	want = max(min(want, h.end-h.pos), n)
	h.win, h.winPos = h.buf[:want], h.pos
	if err := readFull(h.f, h.win, h.pos); err != nil {
		h.win = nil
		return nil, err
	}
	return h.win[:n], nil
}

// next decodes the entry at the scanner's position, applying entryReader's checks except
// the CRC32C (which needs the payload): both use entryLength and entryShapeOK.
func (h *headerScanner) next() (slicedEntry, int, error) {
	if h.pos >= h.end {
		return slicedEntry{}, readEnd, nil
	}
	if h.end-h.pos < entryHeaderSize {
		return slicedEntry{}, readBad, nil
	}
	b, err := h.peek(hdrPeekSize)
	if err != nil {
		return slicedEntry{}, readBad, err
	}
	total, ok := entryLength(b, h.end-h.pos)
	if !ok || be.Uint64(b[8:16]) != h.index || !entryShapeOK(b, total, h.offset) {
		return slicedEntry{}, readBad, nil
	}
	e := slicedEntry{typ: EntryType(b[24]), size: total - entryHeaderSize}
	if e.typ == EntryData {
		p := b[entryHeaderSize:]
		e.base, e.records = recordbatch.BaseOffset(p), recordbatch.Records(p)
		// Only data entries tell the batch sizes to expect: a few small internal entries
		// between large batches must not make the scanner read large payloads.
		h.large = total > hdrSmallEntry
		h.offset += int64(e.records)
	}
	h.pos += total
	h.index++
	return e, readOK, nil
}
