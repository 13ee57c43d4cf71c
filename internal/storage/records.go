package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// RecordBatch v2 header fields that only compaction and the key check read.
const (
	batchNumRecordsPos  = 57 // int32
	batchRecordsPos     = batchHeaderSize
	minRecordBodyLength = 6 // attributes, timestampDelta, offsetDelta, keyLength, valueLength, headers
)

// ErrNullKey is returned by CheckRecordKeys for a batch holding a record without a key.
var ErrNullKey = errors.New("storage: record without a key")

// recordView is one record of a decoded batch. Slices alias the batch's plain records.
type recordView struct {
	raw         []byte // the whole record, length varint included, to copy as it is
	offsetDelta int32
	// timestampDelta is relative to the batch's first timestamp.
	timestampDelta int64
	key            []byte
	nullKey        bool
	tombstone      bool // null value
}

// CheckRecordKeys decodes the records of a RecordBatch v2 (decompressing them if needed)
// and returns ErrNullKey if any record has a null key, or an error wrapping
// ErrInvalidBatch if the records cannot be decoded. Compacted topics use it at produce.
func CheckRecordKeys(batch []byte) error {
	recs, _, err := decodeBatchRecords(batch, nil)
	if err != nil {
		return err
	}
	for i := range recs {
		if recs[i].nullKey {
			return ErrNullKey
		}
	}
	return nil
}

// compactable reports whether compaction may look inside a batch: control and
// transactional batches are kept as they are.
func compactable(batch []byte) bool {
	attrs := be.Uint16(batch[batchAttributesPos:])
	return attrs&(attrControl|attrTransactional) == 0
}

func invalidRecords(format string, args ...any) error {
	return fmt.Errorf("%w: records: %s", ErrInvalidBatch, fmt.Sprintf(format, args...))
}

// decodeBatchRecords decodes every record of a batch, appending the views to recs. It
// returns the plain (decompressed) records section the views alias. Every structural rule
// of the record format is checked: lengths, varint ranges, offset deltas strictly
// increasing within [0, lastOffsetDelta], the record count, and no trailing bytes.
func decodeBatchRecords(batch []byte, recs []recordView) ([]recordView, []byte, error) {
	if err := checkBatch(batch); err != nil {
		return nil, nil, err
	}
	attrs := be.Uint16(batch[batchAttributesPos:])
	codec := int(attrs & codecMask)
	if codec > codecZstd {
		return nil, nil, invalidRecords("unknown compression codec %d", codec)
	}
	n := int32(be.Uint32(batch[batchNumRecordsPos:]))
	lastDelta := int32(be.Uint32(batch[batchLastOffsetDeltaPos:]))
	if n < 0 || int64(n) > int64(lastDelta)+1 {
		return nil, nil, invalidRecords("record count %d with lastOffsetDelta %d", n, lastDelta)
	}
	plain, err := decompressRecords(codec, batch[batchRecordsPos:])
	if err != nil {
		return nil, nil, invalidRecords("codec %d: %v", codec, err)
	}
	if n > 0 && len(plain) == 0 {
		return nil, nil, invalidRecords("%d records in no bytes", n)
	}
	if recs == nil {
		recs = make([]recordView, 0, min(int(n), len(plain)/(minRecordBodyLength+1)+1))
	}
	prev := int32(-1)
	rest := plain
	for i := int32(0); i < n; i++ {
		r, used, err := parseRecord(rest)
		if err != nil {
			return nil, nil, invalidRecords("record %d: %v", i, err)
		}
		if r.offsetDelta <= prev || r.offsetDelta > lastDelta {
			return nil, nil, invalidRecords("record %d: offset delta %d after %d (last %d)", i, r.offsetDelta, prev, lastDelta)
		}
		prev = r.offsetDelta
		recs = append(recs, r)
		rest = rest[used:]
	}
	if len(rest) > 0 {
		return nil, nil, invalidRecords("%d bytes after the last record", len(rest))
	}
	return recs, plain, nil
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

// bytesField reads a varint length (-1 for null when nullable) and that many bytes.
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
	field = b[*p : *p+int(n)]
	*p += int(n)
	return field, false, true
}

// parseRecord decodes the record at the start of b and returns it with its encoded size.
func parseRecord(b []byte) (recordView, int, error) {
	length, w := binary.Varint(b)
	if w <= 0 {
		return recordView{}, 0, errors.New("bad length varint")
	}
	if length < minRecordBodyLength || length > int64(len(b)-w) {
		return recordView{}, 0, fmt.Errorf("length %d with %d bytes left", length, len(b)-w)
	}
	body := b[w : w+int(length)]
	p := 1 // attributes (unused in v2)
	td, ok := varint(body, &p, 64)
	if !ok {
		return recordView{}, 0, errors.New("bad timestamp delta")
	}
	od, ok := varint(body, &p, 32)
	if !ok {
		return recordView{}, 0, errors.New("bad offset delta")
	}
	r := recordView{raw: b[:w+int(length)], offsetDelta: int32(od), timestampDelta: td}
	if r.key, r.nullKey, ok = bytesField(body, &p, true); !ok {
		return recordView{}, 0, errors.New("bad key")
	}
	if _, r.tombstone, ok = bytesField(body, &p, true); !ok {
		return recordView{}, 0, errors.New("bad value")
	}
	nh, ok := varint(body, &p, 32)
	if !ok || nh < 0 {
		return recordView{}, 0, errors.New("bad header count")
	}
	for i := int64(0); i < nh; i++ {
		if _, _, ok := bytesField(body, &p, false); !ok {
			return recordView{}, 0, fmt.Errorf("bad header %d key", i)
		}
		if _, _, ok := bytesField(body, &p, true); !ok {
			return recordView{}, 0, fmt.Errorf("bad header %d value", i)
		}
	}
	if p != len(body) {
		return recordView{}, 0, fmt.Errorf("record body of %d bytes, %d decoded", len(body), p)
	}
	return r, len(r.raw), nil
}

// filterResult says what filterBatch did to one batch.
type filterResult struct {
	kept, removed     int
	tombstonesRemoved int
	changed           bool // the batch was rewritten (removed > 0)
}

// filterBatch returns the batch with only the records keep accepts (keep gets each record
// and its absolute offset). When every record is kept it returns batch itself. Otherwise
// it returns a new batch with the same header fields (base offset, partition leader epoch,
// lastOffsetDelta, timestamps, producer id, epoch and base sequence) and the kept records,
// byte for byte, compressed again with the batch's codec; NumRecords, the length and the
// CRC32C are recomputed. A batch left with no records has no records section and no codec
// (as Kafka writes an empty batch), so every client can skip it. recs is scratch space.
func filterBatch(batch []byte, recs []recordView, keep func(r *recordView, offset int64) bool) ([]byte, filterResult, []recordView, error) {
	var res filterResult
	recs, _, err := decodeBatchRecords(batch, recs[:0])
	if err != nil {
		return nil, res, recs, err
	}
	base := batchBase(batch)
	keepMask := make([]bool, len(recs))
	keptBytes := 0
	for i := range recs {
		r := &recs[i]
		if keep(r, base+int64(r.offsetDelta)) {
			keepMask[i] = true
			res.kept++
			keptBytes += len(r.raw)
		} else {
			res.removed++
			if r.tombstone && !r.nullKey {
				res.tombstonesRemoved++
			}
		}
	}
	if res.removed == 0 {
		return batch, res, recs, nil
	}
	res.changed = true
	attrs := be.Uint16(batch[batchAttributesPos:])
	codec := int(attrs & codecMask)
	var section []byte
	if res.kept > 0 {
		kept := make([]byte, 0, keptBytes)
		for i := range recs {
			if keepMask[i] {
				kept = append(kept, recs[i].raw...)
			}
		}
		if section, err = compressRecords(codec, kept, batch[batchRecordsPos:]); err != nil {
			return nil, res, recs, fmt.Errorf("storage: recompress codec %d: %w", codec, err)
		}
	} else {
		attrs &^= codecMask
	}
	out := make([]byte, batchHeaderSize, batchHeaderSize+len(section))
	copy(out, batch[:batchHeaderSize])
	out = append(out, section...)
	if int64(len(out))-12 > math.MaxInt32 {
		return nil, res, recs, fmt.Errorf("%w: rewritten batch too large", ErrInvalidBatch)
	}
	be.PutUint32(out[batchLengthPos:], uint32(len(out)-12))
	be.PutUint16(out[batchAttributesPos:], attrs)
	be.PutUint32(out[batchNumRecordsPos:], uint32(res.kept))
	be.PutUint32(out[batchCRCPos:], crc32.Checksum(out[batchAttributesPos:], castagnoli))
	return out, res, recs, nil
}
