package partition

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Byte positions of the RecordBatch v2 header fields the produce path reads. The batch CRC
// covers everything from batchAttributesPos onward, so the broker may rewrite the base
// offset and the partition leader epoch without recomputing it.
const (
	batchBaseOffsetPos      = 0
	batchLengthPos          = 8
	batchLeaderEpochPos     = 12
	batchMagicPos           = 16
	batchCRCPos             = 17
	batchAttributesPos      = 21
	batchLastOffsetDeltaPos = 23
	batchFirstTimestampPos  = 27
	batchMaxTimestampPos    = 35
	batchProducerIDPos      = 43
	batchProducerEpochPos   = 51
	batchBaseSequencePos    = 53
	batchRecordCountPos     = 57
	batchHeaderSize         = 61

	attrTransactional = 0x10
	attrControl       = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the part of a RecordBatch v2 header that Kafka semantics depend on.
type BatchHeader struct {
	BaseOffset      int64
	Length          int32
	LeaderEpoch     int32
	Magic           int8
	Attributes      int16
	LastOffsetDelta int32
	FirstTimestamp  int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	NumRecords      int32
}

// ParseBatchHeader reads the header of the batch at the start of b without validating it.
func ParseBatchHeader(b []byte) (BatchHeader, bool) {
	if len(b) < batchHeaderSize {
		return BatchHeader{}, false
	}
	be := binary.BigEndian
	return BatchHeader{
		BaseOffset:      int64(be.Uint64(b[batchBaseOffsetPos:])),
		Length:          int32(be.Uint32(b[batchLengthPos:])),
		LeaderEpoch:     int32(be.Uint32(b[batchLeaderEpochPos:])),
		Magic:           int8(b[batchMagicPos]),
		Attributes:      int16(be.Uint16(b[batchAttributesPos:])),
		LastOffsetDelta: int32(be.Uint32(b[batchLastOffsetDeltaPos:])),
		FirstTimestamp:  int64(be.Uint64(b[batchFirstTimestampPos:])),
		MaxTimestamp:    int64(be.Uint64(b[batchMaxTimestampPos:])),
		ProducerID:      int64(be.Uint64(b[batchProducerIDPos:])),
		ProducerEpoch:   int16(be.Uint16(b[batchProducerEpochPos:])),
		BaseSequence:    int32(be.Uint32(b[batchBaseSequencePos:])),
		NumRecords:      int32(be.Uint32(b[batchRecordCountPos:])),
	}, true
}

// Records is how many offsets the batch takes.
func (h BatchHeader) Records() int32 { return h.LastOffsetDelta + 1 }

// LastSequence is the sequence number of the batch's last record, wrapping as Kafka does.
func (h BatchHeader) LastSequence() int32 {
	s := int64(h.BaseSequence) + int64(h.LastOffsetDelta)
	if s > 0x7fffffff {
		s -= 0x80000000
	}
	return int32(s)
}

// ValidationError carries the Kafka error code a bad batch is answered with.
type ValidationError struct {
	Err *kerr.Error
	Msg string
}

func (e *ValidationError) Error() string { return e.Err.Message + ": " + e.Msg }

// SplitBatches checks a produce payload, which may hold several RecordBatch v2 batches back to
// back, and returns them. A payload that fails any check is rejected whole, so a bad request
// never stores half a write.
func SplitBatches(records []byte, maxMessageBytes int32) ([][]byte, []BatchHeader, error) {
	if len(records) == 0 {
		return nil, nil, &ValidationError{kerr.InvalidRecord, "empty record set"}
	}
	var batches [][]byte
	var headers []BatchHeader
	for rest := records; len(rest) > 0; {
		if len(rest) < batchMagicPos+1 {
			return nil, nil, &ValidationError{kerr.CorruptMessage, "truncated record batch"}
		}
		if magic := int8(rest[batchMagicPos]); magic != 2 {
			return nil, nil, &ValidationError{kerr.UnsupportedForMessageFormat, "only RecordBatch v2 (magic 2) is accepted; produce with v3 or later"}
		}
		h, ok := ParseBatchHeader(rest)
		if !ok {
			return nil, nil, &ValidationError{kerr.CorruptMessage, "truncated record batch header"}
		}
		size := int64(h.Length) + batchLengthPos + 4
		if h.Length < batchHeaderSize-batchLengthPos-4 || size > int64(len(rest)) {
			return nil, nil, &ValidationError{kerr.CorruptMessage, "record batch length does not match the payload"}
		}
		if maxMessageBytes >= 0 && size > int64(maxMessageBytes) {
			return nil, nil, &ValidationError{kerr.MessageTooLarge, "record batch is larger than max.message.bytes"}
		}
		batch := rest[:size]
		if crc32.Checksum(batch[batchAttributesPos:], castagnoli) != uint32(h.crc(batch)) {
			return nil, nil, &ValidationError{kerr.CorruptMessage, "record batch CRC32C mismatch"}
		}
		if h.LastOffsetDelta < 0 || h.NumRecords != h.LastOffsetDelta+1 {
			return nil, nil, &ValidationError{kerr.CorruptMessage, "record count does not match lastOffsetDelta"}
		}
		if h.Attributes&attrControl != 0 {
			return nil, nil, &ValidationError{kerr.InvalidRecord, "clients may not produce control batches"}
		}
		if h.Attributes&attrTransactional != 0 {
			return nil, nil, &ValidationError{kerr.InvalidRecord, "transactions are not supported yet"}
		}
		if codec := h.Attributes & 0x7; codec > 4 {
			return nil, nil, &ValidationError{kerr.CorruptMessage, "unknown compression codec"}
		}
		batches = append(batches, batch)
		headers = append(headers, h)
		rest = rest[size:]
	}
	return batches, headers, nil
}

func (h BatchHeader) crc(batch []byte) int32 {
	return int32(binary.BigEndian.Uint32(batch[batchCRCPos:]))
}
