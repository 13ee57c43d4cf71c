package recordbatch

import "encoding/binary"

// NewRecord is one record to encode. A nil Key or Value is null (a nil Value makes a
// tombstone); an empty non-nil one has length 0.
type NewRecord struct {
	Key, Value     []byte
	TimestampDelta int64
}

// PlainHeader is the header of a batch written by no idempotent producer, as a client
// sends it: base offset 0 (the log assigns the real one), partition leader epoch,
// producer id, producer epoch and base sequence -1, timestamps firstTs and maxTs.
func PlainHeader(firstTs, maxTs int64) Header {
	return Header{LeaderEpoch: -1, FirstTimestamp: firstTs, MaxTimestamp: maxTs, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
}

// Encode builds an uncompressed batch of recs: record i gets offset delta i, NumRecords and
// lastOffsetDelta follow from len(recs), the codec bits of h.Attributes are cleared, and the
// length and CRC are computed. Every other field of h is written as it is.
func Encode(h Header, recs []NewRecord) []byte {
	size := HeaderSize
	for i := range recs {
		n := recordBodyLength(int32(i), &recs[i])
		size += varintLength(int64(n)) + n
	}
	b := make([]byte, HeaderSize, size)
	for i := range recs {
		b = appendRecord(b, int32(i), &recs[i])
	}
	h.NumRecords = int32(len(recs))
	h.LastOffsetDelta = int32(len(recs)) - 1
	h.Attributes &^= CodecMask
	finish(b, h)
	return b
}

// ControlType is the type a control record's key names.
type ControlType int16

// The control record types that end a transaction.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

// EncodeControl builds the control batch that ends a transaction of h's producer: h's
// fields with the control and transactional attributes (no codec), holding one record whose
// key is version 0 and typ and whose value is version 0 and coordinatorEpoch.
func EncodeControl(h Header, typ ControlType, coordinatorEpoch int32) []byte {
	key := be.AppendUint16(be.AppendUint16(make([]byte, 0, 4), 0), uint16(typ))
	value := be.AppendUint32(be.AppendUint16(make([]byte, 0, 6), 0), uint32(coordinatorEpoch))
	h.Attributes = AttrControl | AttrTransactional
	return Encode(h, []NewRecord{{Key: key, Value: value}})
}

// AppendRecord appends one encoded record, its length varint first, to dst.
func AppendRecord(dst []byte, offsetDelta int32, r NewRecord) []byte {
	return appendRecord(dst, offsetDelta, &r)
}

// Assemble builds a batch from h and a records section already encoded (and compressed,
// as h.Attributes says): every field of h is written as it is, but magic is 2 and the
// length and CRC are computed.
func Assemble(h Header, records []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(records))
	b = append(b, records...)
	finish(b, h)
	return b
}

// finish writes h, the length and the CRC into the header of the whole batch b.
func finish(b []byte, h Header) {
	h.Length = int32(len(b) - LengthEnd)
	putHeader(b, h)
	SetCRC(b)
}

func appendRecord(dst []byte, offsetDelta int32, r *NewRecord) []byte {
	dst = binary.AppendVarint(dst, int64(recordBodyLength(offsetDelta, r)))
	dst = append(dst, 0) // attributes, unused in v2
	dst = binary.AppendVarint(dst, r.TimestampDelta)
	dst = binary.AppendVarint(dst, int64(offsetDelta))
	dst = appendBytesField(dst, r.Key)
	dst = appendBytesField(dst, r.Value)
	return append(dst, 0) // no headers
}

func recordBodyLength(offsetDelta int32, r *NewRecord) int {
	return 1 + varintLength(r.TimestampDelta) + varintLength(int64(offsetDelta)) +
		bytesFieldLength(r.Key) + bytesFieldLength(r.Value) + 1
}

func appendBytesField(dst, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(dst, -1)
	}
	return append(binary.AppendVarint(dst, int64(len(v))), v...)
}

func bytesFieldLength(v []byte) int {
	if v == nil {
		return 1
	}
	return varintLength(int64(len(v))) + len(v)
}

// varintLength is how many bytes binary.AppendVarint writes for v.
func varintLength(v int64) int {
	u := uint64(v)<<1 ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// ParseControl reads the type of a control batch's record: ok is false for a batch that is
// not a control batch, or whose one record's key is not a control key (version 0 and a
// type), which consumers would not read as a marker either.
func ParseControl(batch []byte) (typ ControlType, ok bool) {
	if len(batch) <= AttributesPos+1 || Attributes(batch)&AttrControl == 0 {
		return 0, false
	}
	recs, _, err := DecodeRecords(batch, nil)
	if err != nil || len(recs) != 1 || len(recs[0].Key) < 4 || be.Uint16(recs[0].Key) != 0 {
		return 0, false
	}
	return ControlType(be.Uint16(recs[0].Key[2:])), true
}
