package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// The RecordBatch v2 header: the fields this package writes and checks (Kafka protocol).
const (
	batchLengthPos     = 8
	batchMagicPos      = 16
	batchCRCPos        = 17
	batchAttributesPos = 21
	batchLastDeltaPos  = 23
	batchNumRecordsPos = 57
	batchHeaderSize    = 61
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errBadEntry reports a group-0 data entry that is not the one-record batch encodeEntry
// writes. Every replica holds the same bytes, so every replica refuses it the same way.
var errBadEntry = errors.New("cluster: malformed controller entry")

// encodeEntry wraps an encoded controller command as an uncompressed RecordBatch v2 holding
// one record (no key, no headers) whose value is cmd; ts is its timestamp (unix ms). The
// storage layer sets baseOffset and partitionLeaderEpoch, which the CRC does not cover.
func encodeEntry(cmd []byte, ts int64) []byte {
	var rec []byte
	rec = append(rec, 0)               // record attributes
	rec = binary.AppendVarint(rec, 0)  // timestamp delta
	rec = binary.AppendVarint(rec, 0)  // offset delta
	rec = binary.AppendVarint(rec, -1) // null key
	rec = binary.AppendVarint(rec, int64(len(cmd)))
	rec = append(rec, cmd...)
	rec = binary.AppendVarint(rec, 0) // no headers

	b := make([]byte, batchHeaderSize, batchHeaderSize+binary.MaxVarintLen64+len(rec))
	be := binary.BigEndian
	be.PutUint64(b[0:], 0)                   // baseOffset
	be.PutUint32(b[12:], 0xffffffff)         // partitionLeaderEpoch -1
	b[batchMagicPos] = 2                     // magic
	be.PutUint16(b[batchAttributesPos:], 0)  // no compression, not transactional
	be.PutUint32(b[batchLastDeltaPos:], 0)   // lastOffsetDelta
	be.PutUint64(b[27:], uint64(ts))         // firstTimestamp
	be.PutUint64(b[35:], uint64(ts))         // maxTimestamp
	be.PutUint64(b[43:], 0xffffffffffffffff) // producerId -1
	be.PutUint16(b[51:], 0xffff)             // producerEpoch -1
	be.PutUint32(b[53:], 0xffffffff)         // baseSequence -1
	be.PutUint32(b[batchNumRecordsPos:], 1)  // records
	b = binary.AppendVarint(b, int64(len(rec)))
	b = append(b, rec...)
	be.PutUint32(b[batchLengthPos:], uint32(len(b)-12))
	be.PutUint32(b[batchCRCPos:], crc32.Checksum(b[batchAttributesPos:], castagnoli))
	return b
}

// decodeEntry returns the command a group-0 data entry carries. It accepts exactly the
// shape encodeEntry writes (any base offset, epoch and timestamps) and never panics.
func decodeEntry(b []byte) ([]byte, error) {
	bad := func(format string, args ...any) ([]byte, error) {
		return nil, fmt.Errorf("%w: %s", errBadEntry, fmt.Sprintf(format, args...))
	}
	be := binary.BigEndian
	switch {
	case len(b) < batchHeaderSize:
		return bad("%d bytes", len(b))
	case int64(int32(be.Uint32(b[batchLengthPos:]))) != int64(len(b))-12:
		return bad("batch length does not match")
	case b[batchMagicPos] != 2:
		return bad("magic %d", b[batchMagicPos])
	case be.Uint32(b[batchCRCPos:]) != crc32.Checksum(b[batchAttributesPos:], castagnoli):
		return bad("crc mismatch")
	case be.Uint16(b[batchAttributesPos:]) != 0:
		return bad("attributes %#x", be.Uint16(b[batchAttributesPos:]))
	case be.Uint32(b[batchLastDeltaPos:]) != 0 || be.Uint32(b[batchNumRecordsPos:]) != 1:
		return bad("not one record")
	}
	r := b[batchHeaderSize:]
	varint := func() (int64, bool) {
		v, n := binary.Varint(r)
		if n <= 0 {
			return 0, false
		}
		r = r[n:]
		return v, true
	}
	n, ok := varint()
	if !ok || n != int64(len(r)) {
		return bad("record length")
	}
	if len(r) < 1 || r[0] != 0 {
		return bad("record attributes")
	}
	r = r[1:]
	if d, ok := varint(); !ok || d != 0 {
		return bad("timestamp delta")
	}
	if d, ok := varint(); !ok || d != 0 {
		return bad("offset delta")
	}
	if k, ok := varint(); !ok || k != -1 {
		return bad("record key")
	}
	vlen, ok := varint()
	if !ok || vlen < 0 || vlen > int64(len(r)) {
		return bad("record value length")
	}
	v := r[:vlen]
	r = r[vlen:]
	if h, ok := varint(); !ok || h != 0 || len(r) != 0 {
		return bad("record headers or trailing bytes")
	}
	return v, nil
}
