package partition

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

func compactedConfig(policy string) config.TopicConfig {
	return config.ResolveTopic(map[string]string{config.TopicCleanupPolicy: policy, config.TopicSegmentBytes: "1024"}, nil)
}

func keyed(codec kafkatest.Codec, kvs ...string) []byte {
	b := kafkatest.Batch{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Timestamp: time.Now().UnixMilli(), Codec: codec}
	for i := 0; i+1 < len(kvs); i += 2 {
		var k, v []byte
		if kvs[i] != "<null>" {
			k = []byte(kvs[i])
		}
		if kvs[i+1] != "<null>" {
			v = []byte(kvs[i+1])
		}
		b.Keys, b.Values = append(b.Keys, k), append(b.Values, v)
	}
	return b.Bytes()
}

// fetchAll reads every record from the log start: offset -> "key=value" ("key=<null>" for
// a tombstone).
func fetchAll(t *testing.T, p *Partition) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	b := p.Boundaries()
	for off := b.LogStart; off < b.LastVisible; {
		res := p.Fetch(off, 1<<20, -1)
		if res.Err != nil {
			t.Fatalf("Fetch(%d): %v", off, res.Err)
		}
		rest := res.Records
		if len(rest) == 0 {
			t.Fatalf("Fetch(%d): nothing below %d", off, b.LastVisible)
		}
		for len(rest) > 0 {
			h, _ := recordbatch.ParseHeader(rest)
			batch := rest[:h.Size()]
			rb, recs, err := kafkatest.Records(batch)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				v := "<null>"
				if r.Value != nil {
					v = string(r.Value)
				}
				out[rb.FirstOffset+int64(r.OffsetDelta)] = string(r.Key) + "=" + v
			}
			off = h.BaseOffset + int64(h.Records())
			rest = rest[len(batch):]
		}
	}
	return out
}

func TestCompactedTopicRequiresKeys(t *testing.T) {
	for _, policy := range []string{"compact", "compact,delete"} {
		h := newHarness(t, compactedConfig(policy))
		for _, codec := range kafkatest.Codecs {
			res := h.produce(keyed(codec, "a", "1", "<null>", "2"), -1)
			if res.Err != kerr.InvalidRecord || res.Msg != "compacted topics require a key on every record" {
				t.Fatalf("%s %v: null key: %+v", policy, codec, res)
			}
			if res := h.produce(keyed(codec, "a", "1", "b", "<null>"), -1); res.Err != nil {
				t.Fatalf("%s %v: keyed batch with a tombstone: %+v", policy, codec, res)
			}
		}
		// Records that do not decode are refused too.
		bad := keyed(kafkatest.CodecZstd, "a", "1")
		bad[len(bad)-2] ^= 0xff
		recordbatch.SetCRC(bad)
		if res := h.produce(bad, -1); res.Err != kerr.CorruptMessage {
			t.Fatalf("%s: undecodable records: %+v", policy, res)
		}
		if b := h.p.Boundaries(); b.LogEnd != 10 {
			t.Fatalf("%s: log end %d, want the 5 keyed batches of 2 records", policy, b.LogEnd)
		}
	}
	// A delete-only topic takes records without keys.
	h := newHarness(t, defaultConfig())
	if res := h.produce(keyed(kafkatest.CodecNone, "<null>", "1"), -1); res.Err != nil {
		t.Fatalf("delete policy: %+v", res)
	}
}

func TestPartitionCompact(t *testing.T) {
	h := newHarness(t, compactedConfig("compact"))
	latest := map[string]string{}
	var offsets []int64
	for i := 0; i < 60; i++ {
		k, v := fmt.Sprint("k", i%5), fmt.Sprintf("value-%03d-%s", i, "padding-padding-padding")
		if i == 57 {
			v = "<null>"
		}
		res := h.produce(keyed(kafkatest.Codecs[i%5], k, v), -1)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		offsets = append(offsets, res.BaseOffset)
		latest[k] = v
	}
	before := h.p.Boundaries()
	all := fetchAll(t, h.p)
	if len(all) != 60 {
		t.Fatalf("%d records before compaction", len(all))
	}
	if err := h.p.Compact(); err != nil {
		t.Fatal(err)
	}
	after := fetchAll(t, h.p)
	if len(after) >= len(all) || h.p.Boundaries() != before {
		t.Fatalf("%d records left of %d; boundaries %+v, were %+v", len(after), len(all), h.p.Boundaries(), before)
	}
	// Every survivor is the record produced at its offset, and each key's last record is
	// its latest value.
	last := map[string]string{}
	for off := int64(0); off < before.LogEnd; off++ {
		r, ok := after[off]
		if !ok {
			continue
		}
		if r != all[off] {
			t.Fatalf("offset %d: %q, produced %q", off, r, all[off])
		}
		k, v, _ := strings.Cut(r, "=")
		last[k] = v
	}
	if fmt.Sprint(last) != fmt.Sprint(latest) {
		t.Fatalf("latest values %v, want %v", last, latest)
	}
	// The same after a restart.
	h.reopen()
	if got := fetchAll(t, h.p); fmt.Sprint(got) != fmt.Sprint(after) {
		t.Fatalf("after reopen:\n%v\n%v", got, after)
	}
}

func TestCompactionKeepsProducerDedupe(t *testing.T) {
	h := newHarness(t, compactedConfig("compact"))
	produceIdem := func(seq int32, k, v string) ProduceResult {
		b := kafkatest.Batch{Keys: [][]byte{[]byte(k)}, Values: [][]byte{[]byte(v)}, ProducerID: 7, ProducerEpoch: 0, BaseSequence: seq, Timestamp: 1}
		return h.produce(b.Bytes(), -1)
	}
	first := produceIdem(0, "k", "old")
	for i := 0; i < 40; i++ {
		if res := h.produce(keyed(kafkatest.CodecNone, "k", fmt.Sprint("newer-value-padding-padding-", i)), -1); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if err := h.p.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := fetchAll(t, h.p); got[first.BaseOffset] != "" {
		t.Fatalf("the idempotent batch's record survived: %v", got[first.BaseOffset])
	}
	// Its emptied batch still carries the producer's sequence: after a restart a retry is
	// still recognised as a duplicate, and the next sequence is accepted.
	h.reopen()
	if res := produceIdem(0, "k", "old"); res.Err != nil || res.BaseOffset != first.BaseOffset {
		t.Fatalf("retry after compaction: %+v, want offset %d", res, first.BaseOffset)
	}
	if res := produceIdem(1, "k", "next"); res.Err != nil {
		t.Fatalf("next sequence: %+v", res)
	}
}

func TestCleanupPolicyDecidesRetentionAndCompaction(t *testing.T) {
	fill := func(h *harness) {
		for i := 0; i < 30; i++ {
			if res := h.produce(keyed(kafkatest.CodecNone, "k", fmt.Sprint("value-padding-padding-padding-", i)), -1); res.Err != nil {
				t.Fatal(res.Err)
			}
		}
	}
	for _, tc := range []struct {
		policy           string
		retained, cleans bool
	}{{"delete", true, false}, {"compact", false, true}, {"compact,delete", true, true}} {
		cfg := compactedConfig(tc.policy)
		cfg.RetentionBytes = 1 // as small as possible: only the active segment would stay
		h := newHarness(t, cfg)
		fill(h)
		before := len(fetchAll(t, h.p))
		if err := h.p.Compact(); err != nil {
			t.Fatal(err)
		}
		mid := len(fetchAll(t, h.p))
		if got := mid < before; got != tc.cleans {
			t.Errorf("%s: compaction removed records: %v (%d -> %d), want %v", tc.policy, got, before, mid, tc.cleans)
		}
		if err := h.p.EnforceRetention(); err != nil {
			t.Fatal(err)
		}
		if got := h.p.Boundaries().LogStart > 0; got != tc.retained {
			t.Errorf("%s: retention moved the log start: %v, want %v", tc.policy, got, tc.retained)
		}
	}
}

func TestCompactionReapsTombstones(t *testing.T) {
	cfg := compactedConfig("compact")
	cfg.DeleteRetentionMs = 0
	h := newHarness(t, cfg)
	h.produce(keyed(kafkatest.CodecNone, "gone", "1"), -1)
	h.produce(keyed(kafkatest.CodecNone, "gone", "<null>"), -1)
	for i := 0; i < 30; i++ {
		h.produce(keyed(kafkatest.CodecNone, fmt.Sprint("k", i), "value-padding-padding-padding"), -1)
	}
	if err := h.p.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := fetchAll(t, h.p); got[1] != "gone=<null>" || got[0] != "" {
		t.Fatalf("first round: offset 0 %q, 1 %q", got[0], got[1])
	}
	time.Sleep(5 * time.Millisecond)
	if err := h.p.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := fetchAll(t, h.p); got[1] != "" {
		t.Fatalf("tombstone older than delete.retention.ms kept: %q", got[1])
	}
}
