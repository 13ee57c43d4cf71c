package group

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// FuzzDecodeGroupRecord feeds arbitrary keys, values and batches to the decoders replay
// uses: they must never panic, and what they accept must be what was encoded.
func FuzzDecodeGroupRecord(f *testing.F) {
	meta := kmsg.NewGroupMetadataValue()
	meta.Version, meta.ProtocolType, meta.Generation = groupValueVersion, "consumer", 3
	proto, leader, inst := "range", "m1", "i1"
	meta.Protocol, meta.Leader = &proto, &leader
	m := kmsg.NewGroupMetadataValueMember()
	m.MemberID, m.InstanceID, m.Subscription, m.Assignment = "m1", &inst, []byte{0, 1}, []byte{2}
	meta.Members = append(meta.Members, m)
	off := committed{offset: 42, leaderEpoch: 1, metadata: "md", commitMs: 1000, expireMs: -1}
	seeds := []kv{
		{offsetKey("g", tp{"t", 1}), offsetValue(off)},
		{offsetKey("g", tp{"t", 1}), nil},
		{groupKey("g"), meta.AppendTo(nil)},
		{groupKey("g"), nil},
		{[]byte{0, 9, 0, 0}, []byte{0, 1}},
	}
	off.expireMs = 5000
	seeds = append(seeds, kv{offsetKey("g", tp{"t", 2}), offsetValue(off)})
	for _, s := range seeds {
		f.Add(s.key, s.value, encodeBatch([]kv{s}, 7))
	}
	f.Add([]byte{0, 1}, []byte{0, 3, 0}, encodeBatch(seeds, 9))
	f.Fuzz(func(t *testing.T, key, value, batch []byte) {
		rec, err := decodeRecord(key, value)
		if err == nil && !rec.isOffset && !rec.isGroup {
			t.Fatal("decoded a record of no kind")
		}
		// A record the coordinator encodes decodes to what was put in.
		if err == nil && rec.isOffset && rec.offset != nil {
			again := offsetValue(committed{offset: rec.offset.Offset, leaderEpoch: rec.offset.LeaderEpoch,
				metadata: rec.offset.Metadata, commitMs: rec.offset.CommitTimestamp, expireMs: -1})
			back, err := decodeRecord(offsetKey(rec.group, rec.tp), again)
			if err != nil || back.offset.Offset != rec.offset.Offset || back.offset.Metadata != rec.offset.Metadata || back.group != rec.group {
				t.Fatalf("offset record does not round-trip: %v", err)
			}
		}
		r := newReplayer(0, testEpoch)
		recordbatch.WalkBatchRecords(batch, r.apply, r.marker)
		// Every record of a batch the coordinator builds is seen, in order.
		var seen []kv
		raw := encodeBatch([]kv{{key, value}, {value, nil}}, 1)
		_, _, err = recordbatch.WalkRecords(raw, func(o int64, k, v []byte) error {
			seen = append(seen, kv{k, v})
			return nil
		})
		if err != nil || len(seen) != 2 || !bytes.Equal(seen[0].key, key) || !bytes.Equal(seen[0].value, value) ||
			(seen[0].key == nil) != (key == nil) || seen[1].value != nil {
			t.Fatalf("WalkRecords of an encoded batch: %v, %d records", err, len(seen))
		}
	})
}
