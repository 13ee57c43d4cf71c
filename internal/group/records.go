package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/partition"
)

// OffsetsTopic is the internal topic that holds group metadata and committed offsets.
const OffsetsTopic = "__consumer_offsets"

// PartitionFor is the __consumer_offsets partition that holds a group: Kafka's
// abs(groupId.hashCode()) % partitions, with Java's String.hashCode over UTF-16 code units
// and Kafka's abs (which maps MinInt32 to 0), so groups land where Kafka would put them.
func PartitionFor(groupID string, partitions int32) int32 {
	if partitions <= 0 {
		return 0
	}
	h := javaStringHash(groupID)
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}

func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r1, r2 := utf16.EncodeRune(r); r1 != 0xFFFD || r2 != 0xFFFD {
			h = 31*h + int32(r1)
			h = 31*h + int32(r2)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// Record key versions in __consumer_offsets (Kafka's schemas, kept for compatibility).
const (
	keyOffsetCommitV0 = 0 // offset commit key, written by old brokers
	keyOffsetCommitV1 = 1 // offset commit key, what the coordinator writes
	keyGroupMetadata  = 2 // group metadata key
)

// Value versions the coordinator writes: offset commit v3 (leader epoch, no expiry) or v1
// when the commit carries an explicit expiry (OffsetCommit v2-v4 retention time), and group
// metadata v3 (static members).
const (
	offsetValueVersion       = 3
	offsetValueExpireVersion = 1
	groupValueVersion        = 3
)

type tp struct {
	topic     string
	partition int32
}

// kv is one record of a batch the coordinator writes; a nil value is a tombstone.
type kv struct {
	key, value []byte
}

func offsetKey(group string, t tp) []byte {
	k := kmsg.OffsetCommitKey{Version: keyOffsetCommitV1, Group: group, Topic: t.topic, Partition: t.partition}
	return k.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: keyGroupMetadata, Group: group}
	return k.AppendTo(nil)
}

func offsetValue(o committed) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = o.offset, o.leaderEpoch, o.metadata, o.commitMs
	if o.expireMs >= 0 {
		v.Version = offsetValueExpireVersion
		v.ExpireTimestamp = o.expireMs
	}
	return v.AppendTo(nil)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeBatch builds an uncompressed, non-idempotent RecordBatch v2 holding recs, with base
// offset 0 (the log assigns the real one) and every record stamped tsMs.
func encodeBatch(recs []kv, tsMs int64) []byte {
	var body []byte
	var rec []byte
	for i, r := range recs {
		rec = rec[:0]
		rec = append(rec, 0) // attributes
		rec = binary.AppendVarint(rec, 0)
		rec = binary.AppendVarint(rec, int64(i))
		rec = appendVarBytes(rec, r.key)
		rec = appendVarBytes(rec, r.value)
		rec = binary.AppendVarint(rec, 0) // headers
		body = binary.AppendVarint(body, int64(len(rec)))
		body = append(body, rec...)
	}
	be := binary.BigEndian
	b := make([]byte, 0, 61+len(body))
	b = be.AppendUint64(b, 0)                   // base offset
	b = be.AppendUint32(b, 0)                   // length, patched below
	b = be.AppendUint32(b, 0xffffffff)          // partition leader epoch, set by the log
	b = append(b, 2)                            // magic
	b = be.AppendUint32(b, 0)                   // crc, patched below
	b = be.AppendUint16(b, 0)                   // attributes: no compression, create time
	b = be.AppendUint32(b, uint32(len(recs)-1)) // last offset delta
	b = be.AppendUint64(b, uint64(tsMs))        // first timestamp
	b = be.AppendUint64(b, uint64(tsMs))        // max timestamp
	b = be.AppendUint64(b, 0xffffffffffffffff)  // producer id -1
	b = be.AppendUint16(b, 0xffff)              // producer epoch -1
	b = be.AppendUint32(b, 0xffffffff)          // base sequence -1
	b = be.AppendUint32(b, uint32(len(recs)))   // record count
	b = append(b, body...)
	be.PutUint32(b[8:], uint32(len(b)-12))
	be.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

func appendVarBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

var errTruncated = errors.New("truncated")

// walkBatches decodes the raw batches a Fetch returned and calls fn for every record of each
// uncompressed data batch, with the record's offset. Control batches are skipped silently;
// compressed batches (the coordinator never writes them) are skipped and counted. It returns
// the offset after the last whole batch it saw.
func walkBatches(raw []byte, fn func(offset int64, key, value []byte) error) (next int64, skipped int, err error) {
	next = -1
	for len(raw) > 0 {
		h, ok := partition.ParseBatchHeader(raw)
		if !ok {
			return next, skipped, fmt.Errorf("batch header: %w", errTruncated)
		}
		size := int64(h.Length) + 12
		if h.Length < 49 || size > int64(len(raw)) {
			return next, skipped, fmt.Errorf("batch length %d: %w", h.Length, errTruncated)
		}
		batch := raw[:size]
		raw = raw[size:]
		if h.Magic != 2 {
			return next, skipped, fmt.Errorf("batch at offset %d has magic %d", h.BaseOffset, h.Magic)
		}
		if crc32.Checksum(batch[21:], castagnoli) != binary.BigEndian.Uint32(batch[17:]) {
			return next, skipped, fmt.Errorf("batch at offset %d fails its CRC32C", h.BaseOffset)
		}
		if h.LastOffsetDelta < 0 {
			return next, skipped, fmt.Errorf("batch at offset %d has last offset delta %d", h.BaseOffset, h.LastOffsetDelta)
		}
		next = h.BaseOffset + int64(h.LastOffsetDelta) + 1
		switch {
		case h.Attributes&0x20 != 0: // control batch
			continue
		case h.Attributes&0x7 != 0:
			skipped++
			continue
		}
		if err := walkRecords(batch[61:], h, fn); err != nil {
			return next, skipped, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
		}
	}
	return next, skipped, nil
}

func walkRecords(b []byte, h partition.BatchHeader, fn func(offset int64, key, value []byte) error) error {
	for i := int32(0); i < h.NumRecords; i++ {
		n, m := binary.Varint(b)
		if m <= 0 || n < 0 || n > int64(len(b)-m) {
			return fmt.Errorf("record %d length: %w", i, errTruncated)
		}
		rec := b[m : m+int(n)]
		b = b[m+int(n):]
		if len(rec) < 1 {
			return fmt.Errorf("record %d: %w", i, errTruncated)
		}
		rec = rec[1:] // attributes
		var err error
		var delta int64
		if _, rec, err = readVarint(rec); err != nil { // timestamp delta
			return err
		}
		if delta, rec, err = readVarint(rec); err != nil {
			return err
		}
		var key, value []byte
		if key, rec, err = readVarBytes(rec); err != nil {
			return err
		}
		if value, _, err = readVarBytes(rec); err != nil {
			return err
		}
		if err := fn(h.BaseOffset+delta, key, value); err != nil {
			return err
		}
	}
	return nil
}

func readVarint(b []byte) (int64, []byte, error) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, nil, fmt.Errorf("varint: %w", errTruncated)
	}
	return v, b[n:], nil
}

func readVarBytes(b []byte) ([]byte, []byte, error) {
	n, b, err := readVarint(b)
	if err != nil {
		return nil, nil, err
	}
	if n < 0 {
		return nil, b, nil
	}
	if n > int64(len(b)) {
		return nil, nil, fmt.Errorf("bytes: %w", errTruncated)
	}
	return b[:n:n], b[n:], nil
}

// record is one decoded __consumer_offsets record.
type record struct {
	group string
	// Exactly one of the following kinds is set.
	isOffset bool
	tp       tp
	offset   *kmsg.OffsetCommitValue // nil: tombstone
	isGroup  bool
	meta     *kmsg.GroupMetadataValue // nil: tombstone
}

// errUnknownKey marks a record of a schema the coordinator does not know (newer Kafka
// record types); replay skips it.
var errUnknownKey = errors.New("unknown record key version")

// decodeRecord decodes one __consumer_offsets record with Kafka's schemas.
func decodeRecord(key, value []byte) (record, error) {
	if len(key) < 2 {
		return record{}, fmt.Errorf("key: %w", errTruncated)
	}
	switch v := int16(binary.BigEndian.Uint16(key)); v {
	case keyOffsetCommitV0, keyOffsetCommitV1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return record{}, fmt.Errorf("offset commit key: %w", err)
		}
		r := record{group: k.Group, isOffset: true, tp: tp{k.Topic, k.Partition}}
		if value == nil {
			return r, nil
		}
		if len(value) < 2 {
			return record{}, fmt.Errorf("offset commit value: %w", errTruncated)
		}
		if vv := int16(binary.BigEndian.Uint16(value)); vv < 0 || vv > 4 {
			return record{}, fmt.Errorf("offset commit value version %d is not supported", vv)
		}
		var val kmsg.OffsetCommitValue
		if err := val.ReadFrom(value); err != nil {
			return record{}, fmt.Errorf("offset commit value: %w", err)
		}
		if val.Version < 3 {
			val.LeaderEpoch = -1
		}
		r.offset = &val
		return r, nil
	case keyGroupMetadata:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return record{}, fmt.Errorf("group metadata key: %w", err)
		}
		r := record{group: k.Group, isGroup: true}
		if value == nil {
			return r, nil
		}
		if len(value) < 2 {
			return record{}, fmt.Errorf("group metadata value: %w", errTruncated)
		}
		if vv := int16(binary.BigEndian.Uint16(value)); vv < 0 || vv > 4 {
			return record{}, fmt.Errorf("group metadata value version %d is not supported", vv)
		}
		var val kmsg.GroupMetadataValue
		if err := val.ReadFrom(value); err != nil {
			return record{}, fmt.Errorf("group metadata value: %w", err)
		}
		r.meta = &val
		return r, nil
	default:
		return record{}, fmt.Errorf("%w %d", errUnknownKey, v)
	}
}
