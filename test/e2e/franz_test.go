package e2e

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFranzGoProduceConsume: an idempotent acks=all franz-go producer writes keyed records
// to a multi-partition topic; a direct consumer reads every one back at its acknowledged
// partition and offset, in produce order per partition.
func TestFranzGoProduceConsume(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic, parts, n = "franz-keyed", 4, 2000
	createTopic(t, b.Admin(t), topic, parts, nil)

	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(30*time.Second))
	var log ackLog
	ctx := ctxFor(t, 60*time.Second)
	for i := 0; i < n; i++ {
		prod.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("key-%d", i%53)), Value: []byte(fmt.Sprintf("value-%05d", i))}, log.callback)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	acked, failed := log.snapshot()
	if len(failed) > 0 {
		t.Fatalf("%d records failed, first: %v", len(failed), failed[0])
	}
	if len(acked) != n {
		t.Fatalf("%d records acknowledged, want %d", len(acked), n)
	}
	// Callbacks per partition run in produce order; offsets must be 0..k-1 per partition.
	checkPerPartitionOrder(t, acked)
	keyPart := map[string]int32{}
	used := map[int32]bool{}
	for _, a := range acked {
		if p, ok := keyPart[a.Key]; ok && p != a.Partition {
			t.Errorf("key %q went to partitions %d and %d", a.Key, p, a.Partition)
		}
		keyPart[a.Key] = a.Partition
		used[a.Partition] = true
	}
	if len(used) < 2 {
		t.Errorf("53 keys landed in %d partition(s) of %d", len(used), parts)
	}

	got := consumeAll(t, b, topic, parts, n)
	if len(got) != n {
		t.Errorf("consumed %d records, want %d", len(got), n)
	}
	checkAckedReadable(t, acked, got)
	// Per partition the consumer sees the values in produce order.
	lastVal := map[int32]string{}
	for _, r := range got {
		if prev := lastVal[r.Partition]; prev != "" && string(r.Value) <= prev {
			t.Errorf("partition %d: %q delivered after %q", r.Partition, r.Value, prev)
		}
		lastVal[r.Partition] = string(r.Value)
	}

	ends := endOffsets(t, b.Admin(t), topic)
	perPart := map[int32]int64{}
	for _, a := range acked {
		perPart[a.Partition]++
	}
	for p := int32(0); p < parts; p++ {
		if ends[p] != perPart[p] {
			t.Errorf("partition %d: ListOffsets latest = %d, want %d (records acknowledged there)", p, ends[p], perPart[p])
		}
	}
}

// TestFranzGoCompression: batches compressed with each codec franz-go has round-trip, and
// the consumer sees the batch's codec (the broker stores what the producer sent).
func TestFranzGoCompression(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		id    uint8
	}{
		{"none", kgo.NoCompression(), 0},
		{"gzip", kgo.GzipCompression(), 1},
		{"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3},
		{"zstd", kgo.ZstdCompression(), 4},
	}
	adm := b.Admin(t)
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "franz-codec-" + c.name
			createTopic(t, adm, topic, 1, nil)
			prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(c.codec),
				kgo.ProducerLinger(50*time.Millisecond))
			const n = 300
			var log ackLog
			ctx := ctxFor(t, 30*time.Second)
			for i := 0; i < n; i++ {
				v := bytes.Repeat([]byte(fmt.Sprintf("%s-%04d;", c.name, i)), 20)
				prod.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: v}, log.callback)
			}
			if err := prod.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			acked, failed := log.snapshot()
			if len(failed) > 0 {
				t.Fatalf("%d records failed, first: %v", len(failed), failed[0])
			}
			checkPerPartitionOrder(t, acked)
			got := consumeAll(t, b, topic, 1, n)
			checkAckedReadable(t, acked, got)
			for _, r := range got {
				if ct := r.Attrs.CompressionType(); ct != c.id {
					t.Errorf("offset %d arrived in a batch with compression %d, the producer sent %s (%d)", r.Offset, ct, c.name, c.id)
					break
				}
			}
		})
	}
}

// TestRecordShapes: null and empty keys and values, headers and a record of ~900 KB
// (under the default max.message.bytes) round-trip as they were produced.
func TestRecordShapes(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "shapes"
	createTopic(t, b.Admin(t), topic, 1, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(1<<20))
	big := bytes.Repeat([]byte("0123456789abcdef"), 900<<10/16)
	recs := []*kgo.Record{
		{Key: nil, Value: []byte("null key")},
		{Key: []byte{}, Value: []byte("empty key")},
		{Key: []byte("null value"), Value: nil},
		{Key: []byte("empty value"), Value: []byte{}},
		{Key: []byte("headers"), Value: []byte("h"), Headers: []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b", Value: nil}, {Key: "a", Value: []byte("2")}}},
		{Key: []byte("big"), Value: big},
	}
	for i, r := range recs {
		if err := prod.ProduceSync(ctxFor(t, 30*time.Second), r).FirstErr(); err != nil {
			t.Fatalf("producing record %d: %v", i, err)
		}
	}
	got := consumeFrom(t, func(o ...kgo.Opt) *kgo.Client { return b.Client(t, append(o, kgo.FetchMaxBytes(4<<20))...) },
		topic, map[int32]kgo.Offset{0: kgo.NewOffset().At(0)}, len(recs), 30*time.Second)
	nilness := func(b []byte) string {
		if b == nil {
			return "null"
		}
		return fmt.Sprintf("%d bytes", len(b))
	}
	for i, r := range got {
		w := recs[i]
		if (r.Key == nil) != (w.Key == nil) || !bytes.Equal(r.Key, w.Key) {
			t.Errorf("offset %d: key %s %q, produced %s %q", i, nilness(r.Key), r.Key, nilness(w.Key), w.Key)
		}
		if (r.Value == nil) != (w.Value == nil) || !bytes.Equal(r.Value, w.Value) {
			t.Errorf("offset %d: value %s, produced %s", i, nilness(r.Value), nilness(w.Value))
		}
		if len(r.Headers) != len(w.Headers) {
			t.Errorf("offset %d: %d headers, produced %d", i, len(r.Headers), len(w.Headers))
			continue
		}
		for j := range w.Headers {
			if r.Headers[j].Key != w.Headers[j].Key || !bytes.Equal(r.Headers[j].Value, w.Headers[j].Value) || (r.Headers[j].Value == nil) != (w.Headers[j].Value == nil) {
				t.Errorf("offset %d header %d: %q=%q, produced %q=%q", i, j, r.Headers[j].Key, r.Headers[j].Value, w.Headers[j].Key, w.Headers[j].Value)
			}
		}
	}
}

// TestConcurrentProducers: several producers write to one partition at once; every
// acknowledged offset is distinct and holds its record.
func TestConcurrentProducers(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic, producers, each = "concurrent", 4, 500
	createTopic(t, b.Admin(t), topic, 1, nil)
	var log ackLog
	done := make(chan error, producers)
	for p := 0; p < producers; p++ {
		cl := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
		go func() {
			ctx := ctxFor(t, 60*time.Second)
			for i := 0; i < each; i++ {
				cl.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("p%d-%04d", p, i))}, log.callback)
			}
			done <- cl.Flush(ctx)
		}()
	}
	for p := 0; p < producers; p++ {
		if err := <-done; err != nil {
			t.Fatalf("flush: %v", err)
		}
	}
	acked, failed := log.snapshot()
	if len(failed) > 0 {
		t.Fatalf("%d records failed, first: %v", len(failed), failed[0])
	}
	seen := map[int64]string{}
	for _, a := range acked {
		if prev, dup := seen[a.Offset]; dup {
			t.Errorf("offset %d acknowledged for both %q and %q", a.Offset, prev, a.Value)
		}
		seen[a.Offset] = a.Value
	}
	if e := endOffsets(t, b.Admin(t), topic)[0]; e != producers*each {
		t.Errorf("end offset %d, want %d", e, producers*each)
	}
	checkAckedReadable(t, acked, consumeAll(t, b, topic, 1, producers*each))
}
