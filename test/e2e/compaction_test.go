package e2e

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCompaction: a compacted topic refuses a keyless record from a real client; on the
// retention schedule it keeps only the latest value of each key and reaps a tombstone after
// delete.retention.ms; franz-go and sarama consumers reading from the start step over the
// removed offsets and emptied batches, and every record they get sits at the offset it was
// produced at. Producers use every codec, so compacted batches are recompressed.
func TestCompaction(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	adm := b.Admin(t)
	interval := "200"
	if _, err := adm.AlterBrokerConfigs(ctxFor(t, 15*time.Second), []kadm.AlterConfig{{Name: "log.retention.check.interval.ms", Value: &interval}}); err != nil {
		t.Fatal(err)
	}
	const topic = "compacted"
	sp := func(s string) *string { return &s }
	createTopic(t, adm, topic, 1, map[string]*string{
		"cleanup.policy": sp("compact"), "segment.bytes": sp("1024"), "delete.retention.ms": sp("0"),
	})

	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	var clients []*kgo.Client
	for _, c := range codecs {
		clients = append(clients, b.Client(t, kgo.ProducerBatchCompression(c), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner())))
	}
	ctx := ctxFor(t, 60*time.Second)
	res := clients[0].ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("no key")})
	if err := res.FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record: %v, want INVALID_RECORD", err)
	}

	// Ten keys overwritten thirty times, one deleted; then filler with keys of its own, so
	// that every overwrite ends up in a closed segment.
	type produced struct {
		key, value string
		offset     int64
	}
	var all []produced
	// produce sends the records in one batch (one ProduceSync on an idle client).
	produce := func(i int, kvs ...[2]*string) {
		var rs []*kgo.Record
		for _, kv := range kvs {
			r := &kgo.Record{Topic: topic, Key: []byte(*kv[0])}
			if kv[1] != nil {
				r.Value = []byte(*kv[1])
			}
			rs = append(rs, r)
		}
		if err := clients[i%len(clients)].ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		for _, r := range rs {
			all = append(all, produced{key: string(r.Key), value: string(r.Value), offset: r.Offset})
		}
	}
	// Each round overwrites three keys in four, so the latest values end up spread over
	// the last rounds' batches, which compaction leaves partly filled.
	for round := 0; round < 30; round++ {
		var kvs [][2]*string
		for k := 0; k < 10; k++ {
			if (k+round)%4 != 0 {
				kvs = append(kvs, [2]*string{sp(fmt.Sprint("key-", k)), sp(fmt.Sprintf("round-%02d", round))})
			}
		}
		produce(round, kvs...)
	}
	produce(0, [2]*string{sp("key-3"), nil}) // tombstone
	for i := 0; i < 60; i++ {
		produce(i, [2]*string{sp(fmt.Sprint("filler-", i)), sp(strings.Repeat("f", 60))})
	}
	want := map[string]produced{}
	for _, p := range all {
		want[p.key] = p
	}
	delete(want, "key-3")
	end := all[len(all)-1].offset + 1

	// What a consumer from the start sees once compaction has run: every key once, at the
	// offset its latest value was produced at, and no trace of key-3.
	check := func(got map[int64][2]string) error {
		seen := map[string]int64{}
		for off, kv := range got {
			if _, dup := seen[kv[0]]; dup {
				return fmt.Errorf("key %s read twice", kv[0])
			}
			seen[kv[0]] = off
		}
		if len(seen) != len(want) {
			return fmt.Errorf("%d keys read, want %d", len(seen), len(want))
		}
		for k, p := range want {
			if off, ok := seen[k]; !ok || off != p.offset || got[off][1] != p.value {
				return fmt.Errorf("key %s at %d (%v) = %q, want %q at %d", k, off, ok, got[off][1], p.value, p.offset)
			}
		}
		return nil
	}
	consumeFranz := func() map[int64][2]string {
		cl := b.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
		defer cl.Close()
		got := map[int64][2]string{}
		cctx := ctxFor(t, 20*time.Second)
		for {
			fs := cl.PollFetches(cctx)
			if err := cctx.Err(); err != nil {
				t.Fatalf("franz-go consumer did not reach offset %d: %v", end, err)
			}
			var last int64 = -1
			fs.EachRecord(func(r *kgo.Record) {
				got[r.Offset] = [2]string{string(r.Key), string(r.Value)}
				last = r.Offset
			})
			if last == end-1 {
				return got
			}
		}
	}
	var lastErr error
	waitFor(t, 30*time.Second, func() bool {
		lastErr = check(consumeFranz())
		return lastErr == nil
	})

	// On the wire: batches keep their offset ranges; some hold fewer records than offsets,
	// some none at all (uncompressed, no record bytes), and they follow each other.
	rc := dialRaw(t, b.KafkaAddr)
	var partial, empty int
	for next := int64(0); next < end; {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 11
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 100, 1, 1<<20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 0, next, 1<<20, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r, err := rc.roundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		fp := r.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		for raw := fp.RecordBatches; len(raw) > 0; {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(raw); err != nil {
				t.Fatalf("batch at %d: %v", next, err)
			}
			if rb.FirstOffset != next {
				t.Fatalf("batch at %d, want %d", rb.FirstOffset, next)
			}
			switch {
			case rb.NumRecords == 0:
				if len(rb.Records) != 0 || rb.Attributes&7 != 0 {
					t.Fatalf("empty batch at %d: %d record bytes, attributes %#x", next, len(rb.Records), rb.Attributes)
				}
				empty++
			case rb.NumRecords < rb.LastOffsetDelta+1:
				partial++
			}
			next = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
			raw = raw[12+int(rb.Length):]
		}
	}
	if partial == 0 || empty == 0 {
		t.Fatalf("%d partly filled and %d empty batches; the test wants both", partial, empty)
	}

	// sarama, from the oldest offset, to the last record.
	cons, err := sarama.NewConsumer([]string{b.KafkaAddr}, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	got := map[int64][2]string{}
	timeout := time.After(20 * time.Second)
	for len(got) == 0 || !hasOffset(got, end-1) {
		select {
		case m := <-pc.Messages():
			got[m.Offset] = [2]string{string(m.Key), string(m.Value)}
		case err := <-pc.Errors():
			t.Fatalf("sarama: %v", err)
		case <-timeout:
			offs := make([]int64, 0, len(got))
			for o := range got {
				offs = append(offs, o)
			}
			sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
			t.Fatalf("sarama did not reach offset %d; read %v", end-1, offs)
		}
	}
	if err := check(got); err != nil {
		t.Fatalf("sarama: %v", err)
	}
	// librdkafka (kcat and confluent-kafka-python), from the beginning. (kafka-python is left
	// out: the test machines lack its optional lz4 and zstd libraries.)
	kcat := requireKcat(t)
	r := run(t, 60*time.Second, "", kcat, "-C", "-b", b.KafkaAddr, "-t", topic, "-o", "beginning", "-e", "-f", `%o %k %s\n`)
	if r.Err != nil {
		t.Fatalf("kcat: %s", r)
	}
	got = map[int64][2]string{}
	for _, l := range lines(r.Stdout) {
		var off int64
		var k, v string
		if _, err := fmt.Sscan(l, &off, &k, &v); err != nil {
			t.Fatalf("kcat line %q: %v", l, err)
		}
		got[off] = [2]string{k, v}
	}
	if err := check(got); err != nil {
		t.Fatalf("kcat: %v", err)
	}
	for _, py := range []struct{ module, script string }{{"confluent_kafka", "confluent_client.py"}} {
		requirePython(t, py.module)
		var cons pyConsumeResult
		if r := runPython(t, 90*time.Second, &cons, py.script, "consume", b.KafkaAddr, topic, fmt.Sprint(len(want)), "45"); r.Err != nil {
			t.Fatalf("%s consume: %s", py.script, r)
		}
		got = map[int64][2]string{}
		for _, rec := range cons.Records {
			got[rec.Offset] = [2]string{rec.Key, rec.Value}
		}
		if err := check(got); err != nil {
			t.Fatalf("%s: %v", py.script, err)
		}
	}

	// Compaction moved no offset.
	if e := endOffsets(t, adm, topic)[0]; e != end {
		t.Fatalf("end offset %d, want %d", e, end)
	}
}

func hasOffset(m map[int64][2]string, off int64) bool { _, ok := m[off]; return ok }
