package storage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var be = binary.BigEndian

const (
	segHeaderSize   = 64
	segMagic        = "CAIRNSEG"
	segVersion      = 1
	entryHeaderSize = 25 // length u32 | crc u32 | index u64 | term u64 | type u8

	// maxEntryLength bounds an entry's length field; a RecordBatch's own length is an
	// int32, so anything larger is garbage.
	maxEntryLength = math.MaxInt32

	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	tmpSuffix       = ".tmp"
	checkpointName  = "log-start-offset.checkpoint"
)

func segmentName(baseIndex uint64) string { return fmt.Sprintf("%020d", baseIndex) }

// parseSegmentName parses "<20 digits>.log" (or another suffix).
func parseSegmentName(name, suffix string) (uint64, bool) {
	if !strings.HasSuffix(name, suffix) {
		return 0, false
	}
	s := strings.TrimSuffix(name, suffix)
	if len(s) != 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v == 0 {
		return 0, false
	}
	return v, true
}

func segPath(dir string, baseIndex uint64, suffix string) string {
	return filepath.Join(dir, segmentName(baseIndex)+suffix)
}

type segHeader struct {
	baseIndex  uint64
	baseOffset int64
	prevTerm   uint64
	createdMs  int64
	// cleanedMs is when compaction first rewrote the segment (unix ms); 0 if it never
	// has. Tombstones in the segment are kept until delete.retention.ms after it.
	cleanedMs int64
}

func encodeSegHeader(h segHeader) []byte {
	b := make([]byte, segHeaderSize)
	copy(b[0:8], segMagic)
	be.PutUint32(b[8:12], segVersion)
	be.PutUint32(b[12:16], segHeaderSize)
	be.PutUint64(b[16:24], h.baseIndex)
	be.PutUint64(b[24:32], uint64(h.baseOffset))
	be.PutUint64(b[32:40], h.prevTerm)
	be.PutUint64(b[40:48], uint64(h.createdMs))
	be.PutUint64(b[48:56], uint64(h.cleanedMs))
	be.PutUint32(b[60:64], crc32.Checksum(b[:60], castagnoli))
	return b
}

func decodeSegHeader(b []byte) (segHeader, bool) {
	if len(b) < segHeaderSize || string(b[0:8]) != segMagic ||
		be.Uint32(b[8:12]) != segVersion || be.Uint32(b[12:16]) != segHeaderSize ||
		be.Uint32(b[60:64]) != crc32.Checksum(b[:60], castagnoli) {
		return segHeader{}, false
	}
	h := segHeader{
		baseIndex:  be.Uint64(b[16:24]),
		baseOffset: int64(be.Uint64(b[24:32])),
		prevTerm:   be.Uint64(b[32:40]),
		createdMs:  int64(be.Uint64(b[40:48])),
		cleanedMs:  int64(be.Uint64(b[48:56])),
	}
	if h.baseIndex == 0 || h.baseOffset < 0 || h.cleanedMs < 0 {
		return segHeader{}, false
	}
	return h, true
}

// entryMeta is what the log knows about one entry without its payload.
type entryMeta struct {
	index      uint64
	term       uint64
	typ        EntryType
	baseOffset int64
	records    int32
	maxTs      int64
	size       int64 // encoded size, header included
}

func (m *entryMeta) endOffset() int64 { return m.baseOffset + int64(m.records) }

// checkBatch applies recordbatch.Check, the cheap framing checks Append and recovery hold a
// data payload to.
func checkBatch(b []byte) error {
	if err := recordbatch.Check(b); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidBatch, err)
	}
	return nil
}

// appendEntry encodes one entry onto buf: header, then the payload, with a data payload's
// baseOffset and partitionLeaderEpoch fields set (outside the batch CRC, so it stays valid).
func appendEntry(buf []byte, e *Entry) []byte {
	start := len(buf)
	n := len(e.Data)
	var hdr [entryHeaderSize]byte
	be.PutUint32(hdr[0:4], uint32(entryHeaderSize-4+n))
	be.PutUint64(hdr[8:16], e.Index)
	be.PutUint64(hdr[16:24], e.Term)
	hdr[24] = byte(e.Type)
	buf = append(buf, hdr[:]...)
	buf = append(buf, e.Data...)
	if e.Type == EntryData {
		p := buf[start+entryHeaderSize:]
		recordbatch.SetBaseOffset(p, e.BaseOffset)
		recordbatch.SetLeaderEpoch(p, int32(e.Term))
	}
	ent := buf[start:]
	be.PutUint32(ent[4:8], entryCRC(ent))
	return buf
}

// entryCRC is the CRC32C of an encoded entry's length field and everything after its CRC.
func entryCRC(ent []byte) uint32 {
	c := crc32.Update(0, castagnoli, ent[0:4])
	return crc32.Update(c, castagnoli, ent[8:])
}

// parsedEntry is one decoded entry; payload aliases the reader's buffer.
type parsedEntry struct {
	index   uint64
	term    uint64
	typ     EntryType
	payload []byte
	size    int64
}

// meta completes the entry's metadata given the offset it starts at.
func (p *parsedEntry) meta(offset int64) entryMeta {
	m := entryMeta{index: p.index, term: p.term, typ: p.typ, baseOffset: offset, maxTs: -1, size: p.size}
	if p.typ == EntryData {
		m.records = recordbatch.Records(p.payload)
		m.maxTs = recordbatch.MaxTimestamp(p.payload)
	}
	return m
}

// entryLength checks an entry's length field against the bytes left before the read
// limit and returns the entry's whole size.
func entryLength(lengthField []byte, avail int64) (int64, bool) {
	length := int64(be.Uint32(lengthField))
	total := 4 + length
	return total, length >= entryHeaderSize-4 && length <= maxEntryLength && total <= avail
}

// entryShapeOK checks everything about an entry that validEntry does except the CRC32C,
// from its header and the head of its payload: the type, and for a data entry the batch's
// framing and that it starts at offset. head holds the first entryHeaderSize +
// recordbatch.HeadSize bytes of the entry, or all of a shorter one; total is the entry's
// whole size.
func entryShapeOK(head []byte, total int64, offset int64) bool {
	switch EntryType(head[24]) {
	case EntryData:
		size, p := total-entryHeaderSize, head[entryHeaderSize:]
		return size >= recordbatch.HeaderSize && len(p) >= recordbatch.HeadSize &&
			recordbatch.CheckHead(p, size) == nil && recordbatch.BaseOffset(p) == offset
	case EntryInternal:
		return true
	}
	return false
}

// validEntry checks an entry's CRC and structure, and that a data entry's batch sits at
// the expected offset.
func validEntry(ent []byte, offset int64) (parsedEntry, bool) {
	if len(ent) < entryHeaderSize || be.Uint32(ent[4:8]) != entryCRC(ent) ||
		!entryShapeOK(ent, int64(len(ent)), offset) {
		return parsedEntry{}, false
	}
	return parsedEntry{
		index:   be.Uint64(ent[8:16]),
		term:    be.Uint64(ent[16:24]),
		typ:     EntryType(ent[24]),
		payload: ent[entryHeaderSize:],
		size:    int64(len(ent)),
	}, true
}
