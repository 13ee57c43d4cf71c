package recordbatch

import (
	"encoding/binary"
	"errors"
	"math"
)

// minRecordBodyLength is the smallest record body: attributes, timestampDelta, offsetDelta,
// keyLength, valueLength and the header count, one byte each.
const minRecordBodyLength = 6

// ErrNullKey is returned by CheckRecords, when keys are required, for a batch holding a
// record without a key.
var ErrNullKey = errors.New("recordbatch: record without a key")

// Record is one record of a decoded batch. Its slices alias the batch's plain records
// section, so they live as long as that does.
type Record struct {
	Raw         []byte // the whole record, length varint included, to copy as it is
	OffsetDelta int32
	// TimestampDelta is relative to the batch's first timestamp.
	TimestampDelta int64
	Key            []byte
	NullKey        bool
	Value          []byte
	Tombstone      bool // a null value
}

func invalidRecords(format string, args ...any) error {
	return malformed("records: "+format, args...)
}

// DecodeRecords decodes every record of a whole batch, decompressing them if needed, and
// appends the views to recs. It returns the plain records section the views alias. Every
// structural rule of the record format is checked: Check's framing, the codec, lengths,
// varint ranges, offset deltas strictly increasing within [0, lastOffsetDelta], the record
// count, and no trailing bytes. It does not check the CRC.
func DecodeRecords(batch []byte, recs []Record) ([]Record, []byte, error) {
	plain, n, err := recordsSection(batch)
	if err != nil {
		return nil, nil, err
	}
	if recs == nil {
		recs = make([]Record, 0, maxRecords(n, plain))
	}
	if err := walkRecords(batch, plain, n, func(r Record) { recs = append(recs, r) }); err != nil {
		return nil, nil, err
	}
	return recs, plain, nil
}

// CheckRecords applies DecodeRecords' checks to a whole batch, keeping no record, and
// returns an error matching ErrMalformed if any is malformed, or ErrNullKey if requireKeys
// is set and a record has a null key. The produce path runs it on every batch, so that a
// batch whose records no consumer could read is refused rather than stored.
func CheckRecords(batch []byte, requireKeys bool) error {
	plain, n, err := recordsSection(batch)
	if err != nil {
		return err
	}
	nullKey := false
	if err := walkRecords(batch, plain, n, func(r Record) { nullKey = nullKey || r.NullKey }); err != nil {
		return err
	}
	if requireKeys && nullKey {
		return ErrNullKey
	}
	return nil
}

// RecordTime is one record's absolute offset and timestamp.
type RecordTime struct {
	Offset    int64
	Timestamp int64
}

// RecordTimes decodes a whole batch and returns each record's offset and timestamp in
// order: the batch's MaxTimestamp for every record of a log-append-time batch.
func RecordTimes(batch []byte) ([]RecordTime, error) {
	plain, n, err := recordsSection(batch)
	if err != nil {
		return nil, err
	}
	base := BaseOffset(batch)
	first := int64(be.Uint64(batch[FirstTimestampPos:]))
	maxTS := MaxTimestamp(batch)
	logAppend := Attributes(batch)&AttrLogAppendTime != 0
	out := make([]RecordTime, 0, maxRecords(n, plain))
	err = walkRecords(batch, plain, n, func(r Record) {
		ts := first + r.TimestampDelta
		if logAppend {
			ts = maxTS
		}
		out = append(out, RecordTime{Offset: base + int64(r.OffsetDelta), Timestamp: ts})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// recordsSection applies the checks that need no record: Check's framing, the codec, and a
// record count within [0, lastOffsetDelta+1]. It returns the plain records section and the
// record count.
func recordsSection(batch []byte) ([]byte, int32, error) {
	if err := Check(batch); err != nil {
		return nil, 0, err
	}
	codec := int(Attributes(batch) & CodecMask)
	if codec > CodecZstd {
		return nil, 0, invalidRecords("unknown compression codec %d", codec)
	}
	n := int32(be.Uint32(batch[RecordCountPos:]))
	lastDelta := int32(be.Uint32(batch[LastOffsetDeltaPos:]))
	if n < 0 || int64(n) > int64(lastDelta)+1 {
		return nil, 0, invalidRecords("record count %d with lastOffsetDelta %d", n, lastDelta)
	}
	plain, err := Decompress(codec, batch[HeaderSize:])
	if err != nil {
		return nil, 0, invalidRecords("codec %d: %v", codec, err)
	}
	if n > 0 && len(plain) == 0 {
		return nil, 0, invalidRecords("%d records in no bytes", n)
	}
	return plain, n, nil
}

// maxRecords bounds the records a section may hold by its size, so that a count field
// cannot make a decoder allocate more than the bytes it has could fill.
func maxRecords(n int32, plain []byte) int {
	return min(int(n), len(plain)/(minRecordBodyLength+1)+1)
}

// walkRecords parses the n records of a batch's plain section in order, checking each one
// and that offset deltas strictly increase within [0, lastOffsetDelta] with no bytes left
// over, and hands each to visit.
func walkRecords(batch, plain []byte, n int32, visit func(Record)) error {
	lastDelta := int32(be.Uint32(batch[LastOffsetDeltaPos:]))
	prev := int32(-1)
	rest := plain
	for i := int32(0); i < n; i++ {
		r, used, err := parseRecord(rest)
		if err != nil {
			return invalidRecords("record %d: %v", i, err)
		}
		if r.OffsetDelta <= prev || r.OffsetDelta > lastDelta {
			return invalidRecords("record %d: offset delta %d after %d (last %d)", i, r.OffsetDelta, prev, lastDelta)
		}
		prev = r.OffsetDelta
		visit(r)
		rest = rest[used:]
	}
	if len(rest) > 0 {
		return invalidRecords("%d bytes after the last record", len(rest))
	}
	return nil
}

// varint reads one zigzag varint of at most bits bits from b[*p:], advancing *p.
func varint(b []byte, p *int, bits int) (int64, bool) {
	v, w := binary.Varint(b[*p:])
	if w <= 0 {
		return 0, false
	}
	if bits == 32 && (v < math.MinInt32 || v > math.MaxInt32) {
		return 0, false
	}
	*p += w
	return v, true
}

// bytesField reads a varint length (-1 for null when nullable) and that many bytes. The
// field's capacity ends with it, so that appending to it cannot overwrite the next field.
func bytesField(b []byte, p *int, nullable bool) (field []byte, null bool, ok bool) {
	n, ok := varint(b, p, 32)
	if !ok {
		return nil, false, false
	}
	if n == -1 && nullable {
		return nil, true, true
	}
	if n < 0 || n > int64(len(b)-*p) {
		return nil, false, false
	}
	field = b[*p : *p+int(n) : *p+int(n)]
	*p += int(n)
	return field, false, true
}

// parseRecord decodes the record at the start of b and returns it with its encoded size.
func parseRecord(b []byte) (Record, int, error) {
	length, w := binary.Varint(b)
	if w <= 0 {
		return Record{}, 0, errors.New("bad length varint")
	}
	if length < minRecordBodyLength || length > int64(len(b)-w) {
		return Record{}, 0, malformed("length %d with %d bytes left", length, len(b)-w)
	}
	body := b[w : w+int(length)]
	p := 1 // attributes (unused in v2)
	td, ok := varint(body, &p, 64)
	if !ok {
		return Record{}, 0, errors.New("bad timestamp delta")
	}
	od, ok := varint(body, &p, 32)
	if !ok {
		return Record{}, 0, errors.New("bad offset delta")
	}
	r := Record{Raw: b[:w+int(length)], OffsetDelta: int32(od), TimestampDelta: td}
	if r.Key, r.NullKey, ok = bytesField(body, &p, true); !ok {
		return Record{}, 0, errors.New("bad key")
	}
	if r.Value, r.Tombstone, ok = bytesField(body, &p, true); !ok {
		return Record{}, 0, errors.New("bad value")
	}
	nh, ok := varint(body, &p, 32)
	if !ok || nh < 0 {
		return Record{}, 0, errors.New("bad header count")
	}
	for i := int64(0); i < nh; i++ {
		if _, _, ok := bytesField(body, &p, false); !ok {
			return Record{}, 0, malformed("bad header %d key", i)
		}
		if _, _, ok := bytesField(body, &p, true); !ok {
			return Record{}, 0, malformed("bad header %d value", i)
		}
	}
	if p != len(body) {
		return Record{}, 0, malformed("record body of %d bytes, %d decoded", len(body), p)
	}
	return r, len(r.Raw), nil
}
