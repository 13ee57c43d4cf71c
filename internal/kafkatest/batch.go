// Package kafkatest builds Kafka wire data (RecordBatch v2) for tests in any package. It
// holds no broker logic and must never be imported by non-test code. The batch header and
// CRC are recordbatch's; the records and their compression are written and read with kmsg
// and codecs set up apart from recordbatch's, so that a test checks the broker's decoding
// against another encoder.
package kafkatest

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// Batch describes a RecordBatch v2 to build.
type Batch struct {
	Values        [][]byte // one record per value; a nil value is a null value (a tombstone)
	Keys          [][]byte // optional, same length as Values; a nil key is a null key
	Timestamp     int64    // first timestamp; record i gets Timestamp+i
	ProducerID    int64    // -1 for a non-idempotent batch
	ProducerEpoch int16
	BaseSequence  int32
	Attributes    int16
	// Codec compresses the records and sets the attributes' codec bits (CodecNone: none).
	Codec Codec
	// XerialSnappy frames CodecSnappy data as the Java client's xerial stream does,
	// instead of one raw snappy block.
	XerialSnappy bool
}

// Plain returns a non-idempotent batch of n records "v0".."vN-1" at timestamp ts.
func Plain(n int, ts int64) Batch {
	b := Batch{Timestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	for i := 0; i < n; i++ {
		b.Values = append(b.Values, []byte{'v', byte('0' + i%10)})
	}
	return b
}

// Bytes encodes the batch with base offset 0, partition leader epoch -1 and a valid CRC32C.
func (b Batch) Bytes() []byte {
	var recs []byte
	for i, v := range b.Values {
		r := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Value: v}
		if b.Keys != nil {
			r.Key = b.Keys[i]
		}
		body := r.AppendTo(nil)[1:] // drop the zero length varint AppendTo wrote
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	attrs := b.Attributes
	if b.Codec != CodecNone {
		recs = Compress(b.Codec, recs, b.XerialSnappy)
		attrs = attrs&^recordbatch.CodecMask | int16(b.Codec)
	}
	return recordbatch.Assemble(recordbatch.Header{
		LeaderEpoch:     -1,
		Attributes:      attrs,
		LastOffsetDelta: int32(len(b.Values) - 1),
		FirstTimestamp:  b.Timestamp,
		MaxTimestamp:    b.Timestamp + int64(len(b.Values)-1),
		ProducerID:      b.ProducerID,
		ProducerEpoch:   b.ProducerEpoch,
		BaseSequence:    b.BaseSequence,
		NumRecords:      int32(len(b.Values)),
	}, recs)
}

// KV is one record of a KeyedBatch: a nil Key is a null key, a nil Value a tombstone.
type KV struct{ Key, Value []byte }

// KeyedBatch encodes a non-idempotent batch of recs at timestamp ts, compressed with codec
// (and, for snappy, framed as the Java client's xerial stream when xerial is set).
func KeyedBatch(ts int64, codec Codec, xerial bool, recs ...KV) []byte {
	b := Batch{Timestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: codec, XerialSnappy: xerial}
	for _, r := range recs {
		b.Keys = append(b.Keys, r.Key)
		b.Values = append(b.Values, r.Value)
	}
	return b.Bytes()
}
