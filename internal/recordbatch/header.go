package recordbatch

import (
	"errors"
	"fmt"
)

// ErrMalformed is matched (errors.Is) by every error this package returns for bytes that
// are not a well-formed batch. The errors' own text says only what is wrong, so that a
// caller can wrap them under its own sentinel without repeating itself.
var ErrMalformed = errors.New("recordbatch: malformed record batch")

type formatError struct{ msg string }

func (e *formatError) Error() string        { return e.msg }
func (e *formatError) Is(target error) bool { return target == ErrMalformed }

func malformed(format string, args ...any) error {
	return &formatError{fmt.Sprintf(format, args...)}
}

// Header is every field of a batch header but the CRC.
type Header struct {
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

// ParseHeader reads the header of the batch at the start of b without validating it.
func ParseHeader(b []byte) (Header, bool) {
	if len(b) < HeaderSize {
		return Header{}, false
	}
	return Header{
		BaseOffset:      int64(be.Uint64(b[BaseOffsetPos:])),
		Length:          int32(be.Uint32(b[LengthPos:])),
		LeaderEpoch:     int32(be.Uint32(b[LeaderEpochPos:])),
		Magic:           int8(b[MagicPos]),
		Attributes:      int16(be.Uint16(b[AttributesPos:])),
		LastOffsetDelta: int32(be.Uint32(b[LastOffsetDeltaPos:])),
		FirstTimestamp:  int64(be.Uint64(b[FirstTimestampPos:])),
		MaxTimestamp:    int64(be.Uint64(b[MaxTimestampPos:])),
		ProducerID:      int64(be.Uint64(b[ProducerIDPos:])),
		ProducerEpoch:   int16(be.Uint16(b[ProducerEpochPos:])),
		BaseSequence:    int32(be.Uint32(b[BaseSequencePos:])),
		NumRecords:      int32(be.Uint32(b[RecordCountPos:])),
	}, true
}

// putHeader writes h into b[:HeaderSize] with magic 2, leaving the CRC to the caller.
func putHeader(b []byte, h Header) {
	be.PutUint64(b[BaseOffsetPos:], uint64(h.BaseOffset))
	be.PutUint32(b[LengthPos:], uint32(h.Length))
	be.PutUint32(b[LeaderEpochPos:], uint32(h.LeaderEpoch))
	b[MagicPos] = Magic
	be.PutUint16(b[AttributesPos:], uint16(h.Attributes))
	be.PutUint32(b[LastOffsetDeltaPos:], uint32(h.LastOffsetDelta))
	be.PutUint64(b[FirstTimestampPos:], uint64(h.FirstTimestamp))
	be.PutUint64(b[MaxTimestampPos:], uint64(h.MaxTimestamp))
	be.PutUint64(b[ProducerIDPos:], uint64(h.ProducerID))
	be.PutUint16(b[ProducerEpochPos:], uint16(h.ProducerEpoch))
	be.PutUint32(b[BaseSequencePos:], uint32(h.BaseSequence))
	be.PutUint32(b[RecordCountPos:], uint32(h.NumRecords))
}

// Records is how many offsets the batch takes.
func (h Header) Records() int32 { return h.LastOffsetDelta + 1 }

// Size is the batch's whole size as its length field claims it.
func (h Header) Size() int64 { return LengthEnd + int64(h.Length) }

// Codec is the codec of the batch's records section.
func (h Header) Codec() int { return int(h.Attributes & CodecMask) }

// LastSequence is the sequence number of the batch's last record, wrapping as Kafka does.
func (h Header) LastSequence() int32 {
	s := int64(h.BaseSequence) + int64(h.LastOffsetDelta)
	if s > 0x7fffffff {
		s -= 0x80000000
	}
	return int32(s)
}

// Check applies the cheap framing checks to a whole batch b: at least a header, a length
// field that matches len(b), magic 2 and a lastOffsetDelta that is not negative. It reads
// neither the CRC nor the records.
func Check(b []byte) error {
	if len(b) < HeaderSize {
		return malformed("%d bytes, want at least %d", len(b), HeaderSize)
	}
	return CheckHead(b, int64(len(b)))
}

// CheckHead applies Check's checks to the first HeadSize bytes of a batch whose whole size
// is size (at least HeaderSize), so that readers which fetch only headers hold batches to
// the same rules as those which read them whole.
func CheckHead(head []byte, size int64) error {
	if n := int32(be.Uint32(head[LengthPos:])); int64(n) != size-LengthEnd {
		return malformed("batchLength %d does not match %d bytes", n, size)
	}
	if head[MagicPos] != Magic {
		return malformed("magic %d, want 2", head[MagicPos])
	}
	if d := int32(be.Uint32(head[LastOffsetDeltaPos:])); d < 0 {
		return malformed("lastOffsetDelta %d", d)
	}
	return nil
}
