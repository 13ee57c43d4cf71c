package recordbatch

import (
	"encoding/binary"
	"hash/crc32"
)

// Byte positions of the header fields, and the header's size.
const (
	BaseOffsetPos      = 0  // int64
	LengthPos          = 8  // int32: the bytes after this field
	LeaderEpochPos     = 12 // int32 partitionLeaderEpoch
	MagicPos           = 16 // int8
	CRCPos             = 17 // uint32 CRC32C of the bytes from AttributesPos on
	AttributesPos      = 21 // int16
	LastOffsetDeltaPos = 23 // int32
	FirstTimestampPos  = 27 // int64
	MaxTimestampPos    = 35 // int64
	ProducerIDPos      = 43 // int64
	ProducerEpochPos   = 51 // int16
	BaseSequencePos    = 53 // int32
	RecordCountPos     = 57 // int32
	HeaderSize         = 61 // the records section starts here

	// LengthEnd is where the bytes batchLength counts begin: a batch's whole size is
	// LengthEnd + batchLength.
	LengthEnd = LengthPos + 4
	// HeadSize is how much of a batch CheckHead reads: up to lastOffsetDelta.
	HeadSize = LastOffsetDeltaPos + 4

	// Magic is the only magic byte (format version) this package reads or writes.
	Magic = 2
)

// Compression codecs, as attributes bits 0-2 name them, and the other attribute bits.
const (
	CodecNone   = 0
	CodecGzip   = 1
	CodecSnappy = 2
	CodecLZ4    = 3
	CodecZstd   = 4
	CodecMask   = 0x07

	AttrLogAppendTime = 0x08 // every record carries the batch's MaxTimestamp
	AttrTransactional = 0x10
	AttrControl       = 0x20
)

var be = binary.BigEndian

// The accessors below read or write one field of the batch at the start of b, which must
// hold at least the header (or HeadSize bytes for the fields before FirstTimestampPos).

// BaseOffset is the offset of the batch's first record.
func BaseOffset(b []byte) int64 { return int64(be.Uint64(b[BaseOffsetPos:])) }

// Size is the whole size the batch's length field claims, LengthEnd included.
func Size(b []byte) int64 { return LengthEnd + int64(int32(be.Uint32(b[LengthPos:]))) }

// Attributes is the batch's attributes field.
func Attributes(b []byte) int16 { return int16(be.Uint16(b[AttributesPos:])) }

// Records is how many offsets the batch takes: lastOffsetDelta + 1.
func Records(b []byte) int32 { return int32(be.Uint32(b[LastOffsetDeltaPos:])) + 1 }

// MaxTimestamp is the batch's maxTimestamp field.
func MaxTimestamp(b []byte) int64 { return int64(be.Uint64(b[MaxTimestampPos:])) }

// SetBaseOffset writes the baseOffset field, which the CRC does not cover: the batch stays
// valid.
func SetBaseOffset(b []byte, offset int64) { be.PutUint64(b[BaseOffsetPos:], uint64(offset)) }

// SetLeaderEpoch writes the partitionLeaderEpoch field, which the CRC does not cover either.
func SetLeaderEpoch(b []byte, epoch int32) { be.PutUint32(b[LeaderEpochPos:], uint32(epoch)) }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC32C (Castagnoli) of b.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// CRCValid reports whether the CRC field of batch, which must be whole, matches its bytes.
func CRCValid(batch []byte) bool {
	return be.Uint32(batch[CRCPos:]) == Checksum(batch[AttributesPos:])
}

// SetCRC computes the CRC of batch, which must be whole, and writes it.
func SetCRC(batch []byte) { be.PutUint32(batch[CRCPos:], Checksum(batch[AttributesPos:])) }
