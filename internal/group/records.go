package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/recordbatch"
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

// encodeBatch builds an uncompressed, non-idempotent RecordBatch v2 holding recs, with base
// offset 0 (the log assigns the real one) and every record stamped tsMs.
func encodeBatch(recs []kv, tsMs int64) []byte {
	return encodeRecords(recordbatch.PlainHeader(tsMs, tsMs), recs)
}

// encodeRecords builds an uncompressed batch of recs with header h.
func encodeRecords(h recordbatch.Header, recs []kv) []byte {
	out := make([]recordbatch.NewRecord, len(recs))
	for i, r := range recs {
		out[i] = recordbatch.NewRecord{Key: r.key, Value: r.value}
	}
	return recordbatch.Encode(h, out)
}

var errTruncated = errors.New("truncated")

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
