package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchLongPoll: a consumer waiting in a Fetch with a 5 s max wait receives a record
// as soon as it is produced, not when the wait runs out.
func TestFetchLongPoll(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "long-poll"
	createTopic(t, b.Admin(t), topic, 1, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	cons := b.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(5*time.Second))

	received := make(chan *kgo.Record, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) { received <- r })
		}
	}()
	t.Cleanup(func() { cancel(); <-done })

	for i := 0; i < 4; i++ {
		// Each record is produced right after the previous one arrived, so the consumer's
		// next Fetch has just started its 5 s wait: only a wake-up on append beats 4 s.
		start := time.Now()
		if err := prod.ProduceSync(ctxFor(t, 10*time.Second), &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		select {
		case r := <-received:
			d := time.Since(start)
			t.Logf("record %d: produce to receive %v", i, d.Round(time.Millisecond))
			if d >= 4*time.Second {
				t.Errorf("record %d reached the long-polling consumer %v after it was produced; the fetch waited for its 5 s max wait", i, d.Round(time.Millisecond))
			}
			if r.Offset != int64(i) {
				t.Errorf("received offset %d, want %d", r.Offset, i)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("record %d not received within 15s", i)
		}
	}
}

// TestFetchMidBatch: a fetch from an offset inside a stored batch returns that batch and
// the client delivers records from the requested offset on.
func TestFetchMidBatch(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "mid-batch"
	createTopic(t, b.Admin(t), topic, 1, nil)
	cl := b.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	// One batch of 10 records: offsets 0..9.
	resp, err := cl.Request(ctxFor(t, 15*time.Second), produceRequest(produceVersion, -1, topic, 0, simpleBatch("mb", 10)))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := producePartitionResponse(resp); err != nil || p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("producing one 10-record batch: %+v %v", p, err)
	}

	got := consumeFrom(t, func(o ...kgo.Opt) *kgo.Client { return b.Client(t, o...) }, topic,
		map[int32]kgo.Offset{0: kgo.NewOffset().At(5)}, 5, 30*time.Second)
	for i, r := range got {
		if want := int64(5 + i); r.Offset != want || string(r.Value) != fmt.Sprintf("mb-%d", want) {
			t.Errorf("record %d delivered: offset %d value %q, want offset %d value mb-%d", i, r.Offset, r.Value, want, want)
		}
	}

	// The raw answer holds the whole stored batch (base offset 0), covering offset 5.
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 100
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, 5, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	fr, err := req.RequestWith(ctxFor(t, 15*time.Second), cl)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		t.Fatalf("Fetch answered %+v", fr.Topics)
	}
	fp := fr.Topics[0].Partitions[0]
	if fp.ErrorCode != 0 || fp.HighWatermark != 10 {
		t.Errorf("Fetch at 5: %s, high watermark %d; want NONE, 10", kerrName(fp.ErrorCode), fp.HighWatermark)
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(fp.RecordBatches); err != nil {
		t.Fatalf("Fetch at 5: records do not start with a RecordBatch: %v", err)
	}
	if rb.FirstOffset > 5 || rb.FirstOffset+int64(rb.LastOffsetDelta) < 5 {
		t.Errorf("Fetch at 5 returned a first batch covering %d..%d", rb.FirstOffset, rb.FirstOffset+int64(rb.LastOffsetDelta))
	}
}

// TestListOffsets: earliest, latest, by timestamp and max timestamp (-3).
func TestListOffsets(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "list-offsets"
	adm := b.Admin(t)
	createTopic(t, adm, topic, 1, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic))
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	// Timestamps rise by 1 s per record, except offset 6 which is the latest of all.
	ts := func(i int) time.Time {
		if i == 6 {
			return base.Add(30 * time.Second)
		}
		return base.Add(time.Duration(i) * time.Second)
	}
	for i := 0; i < 10; i++ {
		r := &kgo.Record{Value: []byte(fmt.Sprint(i)), Timestamp: ts(i)}
		if err := prod.ProduceSync(ctxFor(t, 15*time.Second), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	lookup := func(what string, f func() (kadm.ListedOffsets, error)) kadm.ListedOffset {
		t.Helper()
		l, err := f()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		o, ok := l.Lookup(topic, 0)
		if !ok || o.Err != nil {
			t.Fatalf("%s: %+v", what, o)
		}
		return o
	}
	ctx := ctxFor(t, 30*time.Second)
	if o := lookup("earliest", func() (kadm.ListedOffsets, error) { return adm.ListStartOffsets(ctx, topic) }); o.Offset != 0 {
		t.Errorf("ListOffsets earliest = %d, want 0", o.Offset)
	}
	if o := lookup("latest", func() (kadm.ListedOffsets, error) { return adm.ListEndOffsets(ctx, topic) }); o.Offset != 10 {
		t.Errorf("ListOffsets latest = %d, want 10", o.Offset)
	}
	if o := lookup("timestamp base+3.5s", func() (kadm.ListedOffsets, error) {
		return adm.ListOffsetsAfterMilli(ctx, base.Add(3500*time.Millisecond).UnixMilli(), topic)
	}); o.Offset != 4 || o.Timestamp != ts(4).UnixMilli() {
		t.Errorf("ListOffsets at base+3.5s = offset %d timestamp %d, want offset 4 timestamp %d", o.Offset, o.Timestamp, ts(4).UnixMilli())
	}
	if o := lookup("timestamp base", func() (kadm.ListedOffsets, error) { return adm.ListOffsetsAfterMilli(ctx, base.UnixMilli(), topic) }); o.Offset != 0 {
		t.Errorf("ListOffsets at base = offset %d, want 0", o.Offset)
	}
	if o := lookup("timestamp base+20s", func() (kadm.ListedOffsets, error) {
		return adm.ListOffsetsAfterMilli(ctx, base.Add(20*time.Second).UnixMilli(), topic)
	}); o.Offset != 6 {
		t.Errorf("ListOffsets at base+20s = offset %d, want 6 (the only record at or after it)", o.Offset)
	}
	if o := lookup("timestamp after all", func() (kadm.ListedOffsets, error) {
		return adm.ListOffsetsAfterMilli(ctx, base.Add(time.Minute).UnixMilli(), topic)
	}); o.Offset != 10 {
		t.Errorf("ListOffsets after every timestamp = offset %d, want 10 (kadm maps 'none' to the end)", o.Offset)
	}
	if o := lookup("max timestamp", func() (kadm.ListedOffsets, error) { return adm.ListMaxTimestampOffsets(ctx, topic) }); o.Offset != 6 || o.Timestamp != ts(6).UnixMilli() {
		t.Errorf("ListOffsets max timestamp (-3) = offset %d timestamp %d, want offset 6 timestamp %d", o.Offset, o.Timestamp, ts(6).UnixMilli())
	}

	// The raw answer for a timestamp after every record is offset -1 (Kafka's "none").
	cl := b.Client(t)
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, base.Add(time.Minute).UnixMilli(), -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != -1 {
		t.Errorf("raw ListOffsets after every timestamp: %s offset %d, want NONE offset -1", kerrName(p.ErrorCode), p.Offset)
	}
}

// TestDeleteRecords: DeleteRecords advances the earliest offset; reads start there.
func TestDeleteRecords(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "delete-records"
	adm := b.Admin(t)
	createTopic(t, adm, topic, 1, nil)
	produceSync(t, b.Client(t, kgo.DefaultProduceTopic(topic)), topic, "dr", 20)

	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 7})
	resps, err := adm.DeleteRecords(ctxFor(t, 15*time.Second), offs)
	if err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	r, err := resps.On(topic, 0, nil)
	if err != nil || r.Err != nil || r.LowWatermark != 7 {
		t.Fatalf("DeleteRecords before 7: %+v %v, want low watermark 7", r, err)
	}
	if o := startOffsets(t, adm, topic)[0]; o != 7 {
		t.Errorf("ListOffsets earliest after DeleteRecords = %d, want 7", o)
	}
	if o := endOffsets(t, adm, topic)[0]; o != 20 {
		t.Errorf("ListOffsets latest after DeleteRecords = %d, want 20", o)
	}
	if st := b.Partition(t, topic, 0); st.LogStart != 7 {
		t.Errorf("admin API log_start_offset = %d after DeleteRecords, want 7", st.LogStart)
	}
	got := consumeAll(t, b, topic, 1, 13)
	if len(got) == 0 || got[0].Offset != 7 || string(got[0].Value) != "dr-7" {
		t.Errorf("consumer from the start after DeleteRecords begins at %+v, want offset 7 (dr-7)", got[0])
	}
	// Fetching below the log start is out of range; deleting past the end is refused;
	// deleting up to -1 means up to the high watermark.
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 100, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, 3, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	fr, err := req.RequestWith(ctxFor(t, 15*time.Second), b.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	if p := fr.Topics[0].Partitions[0]; p.ErrorCode != 1 {
		t.Errorf("Fetch at 3 below the log start 7: %s, want %s", kerrName(p.ErrorCode), kerrName(1))
	}
	var past kadm.Offsets
	past.Add(kadm.Offset{Topic: topic, Partition: 0, At: 25})
	resps, err = adm.DeleteRecords(ctxFor(t, 15*time.Second), past)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := resps.On(topic, 0, nil); r.Err == nil || !strings.Contains(r.Err.Error(), "OFFSET_OUT_OF_RANGE") {
		t.Errorf("DeleteRecords before 25 with the high watermark at 20: %v, want OFFSET_OUT_OF_RANGE", r.Err)
	}
	if o := startOffsets(t, adm, topic)[0]; o != 7 {
		t.Errorf("after a refused DeleteRecords the log start is %d, want 7", o)
	}

	// The earliest offset survives a restart.
	b.Restart()
	if o := startOffsets(t, adm, topic)[0]; o != 7 {
		t.Errorf("ListOffsets earliest after DeleteRecords and a restart = %d, want 7", o)
	}
}

// TestShutdownWithParkedFetch: SIGTERM stops the broker promptly (exit 0) even while a
// consumer's Fetch is parked in a long poll; it does not wait out the client's max wait.
func TestShutdownWithParkedFetch(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "parked"
	createTopic(t, b.Admin(t), topic, 1, nil)

	rc := dialRaw(t, b.KafkaAddr)
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxWaitMillis = 15000
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, 0, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if _, err := rc.send(req); err != nil {
		t.Fatal(err)
	}
	// The empty partition holds the Fetch for up to its 15 s max wait.
	if f, err := rc.readFrame(500 * time.Millisecond); err == nil {
		t.Fatalf("a Fetch with min bytes 1 on an empty partition was answered at once (%d bytes) instead of waiting", len(f))
	}
	start := time.Now()
	b.Stop()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("SIGTERM took %v to stop the broker while a Fetch (max wait 15 s) was parked; want a prompt shutdown", d.Round(time.Millisecond))
	}
}

// TestFetchEdges: a partition max bytes smaller than the first batch still returns that
// batch whole; a fetch past the end is OFFSET_OUT_OF_RANGE; the broker, not the producer,
// assigns a batch's base offset; ListOffsets by timestamp finds a record inside a batch.
func TestFetchEdges(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "fetch-edges"
	createTopic(t, b.Admin(t), topic, 1, nil)
	cl := b.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	produce := func(batch []byte) int64 {
		t.Helper()
		resp, err := cl.Request(ctxFor(t, 15*time.Second), produceRequest(produceVersion, -1, topic, 0, batch))
		if err != nil {
			t.Fatal(err)
		}
		p, err := producePartitionResponse(resp)
		if err != nil || p.ErrorCode != 0 {
			t.Fatalf("produce: %s %v", kerrName(p.ErrorCode), err)
		}
		return p.BaseOffset
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	// Offsets 0..4, one batch, 10 KB each, timestamps base+0s .. base+4s except offset 3 at
	// base+9s (the batch's max).
	s := batchSpec{producerID: -1, timestamp: base}
	for i := 0; i < 5; i++ {
		d := int64(i) * 1000
		if i == 3 {
			d = 9000
		}
		s.records = append(s.records, kv{value: bytes.Repeat([]byte{byte('a' + i)}, 10<<10), tsDelta: d})
	}
	if off := produce(buildBatch(s)); off != 0 {
		t.Fatalf("first batch stored at %d", off)
	}
	// A batch that claims base offset 1000 lands at the log end (5).
	lying := batchSpec{producerID: -1, firstOffset: 1000, records: []kv{{value: []byte("x5")}, {value: []byte("x6")}}}
	if off := produce(buildBatch(lying)); off != 5 {
		t.Errorf("a batch whose header says base offset 1000 was stored at %d, want 5 (the log end)", off)
	}

	t.Run("max-bytes-below-batch", func(t *testing.T) {
		got := consumeFrom(t, func(o ...kgo.Opt) *kgo.Client {
			return b.Client(t, append(o, kgo.FetchMaxBytes(100), kgo.FetchMaxPartitionBytes(100))...)
		}, topic, map[int32]kgo.Offset{0: kgo.NewOffset().At(0)}, 7, 30*time.Second)
		for i, r := range got {
			if r.Offset != int64(i) {
				t.Errorf("record %d delivered at offset %d", i, r.Offset)
			}
		}
		if string(got[5].Value) != "x5" || string(got[6].Value) != "x6" {
			t.Errorf("offsets 5, 6 hold %q, %q; want x5, x6", got[5].Value, got[6].Value)
		}
	})
	t.Run("out-of-range", func(t *testing.T) {
		for _, off := range []int64{8, 1000} {
			req := kmsg.NewPtrFetchRequest()
			req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 100, 1, 1<<20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, off, 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctxFor(t, 15*time.Second), cl)
			if err != nil {
				t.Fatal(err)
			}
			if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 1 {
				t.Errorf("Fetch at %d with the log end at 7: %s, want %s", off, kerrName(p.ErrorCode), kerrName(1))
			}
		}
	})
	t.Run("timestamps-inside-a-batch", func(t *testing.T) {
		adm := b.Admin(t)
		ctx := ctxFor(t, 15*time.Second)
		l, err := adm.ListOffsetsAfterMilli(ctx, base+1500, topic)
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := l.Lookup(topic, 0); o.Offset != 2 || o.Timestamp != base+2000 {
			t.Errorf("ListOffsets at base+1.5s = offset %d timestamp %d, want offset 2 timestamp %d (inside the first batch)", o.Offset, o.Timestamp, base+2000)
		}
		l, err = adm.ListOffsetsAfterMilli(ctx, base+5000, topic)
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := l.Lookup(topic, 0); o.Offset != 3 {
			t.Errorf("ListOffsets at base+5s = offset %d, want 3 (the first record with a timestamp at or after it)", o.Offset)
		}
		l, err = adm.ListMaxTimestampOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		// Offsets 5 and 6 were stamped now, later than every record of the first batch.
		if o, _ := l.Lookup(topic, 0); o.Offset != 5 && o.Offset != 6 {
			t.Errorf("ListOffsets max timestamp = offset %d, want 5 or 6 (the batch stamped now)", o.Offset)
		}
		// A topic holding only the first batch: its max timestamp is offset 3's, inside it.
		createTopic(t, adm, "fetch-edges-one-batch", 1, nil)
		resp, err := cl.Request(ctx, produceRequest(produceVersion, -1, "fetch-edges-one-batch", 0, buildBatch(s)))
		if err != nil {
			t.Fatal(err)
		}
		if p, err := producePartitionResponse(resp); err != nil || p.ErrorCode != 0 {
			t.Fatalf("produce: %+v %v", p, err)
		}
		l, err = adm.ListMaxTimestampOffsets(ctx, "fetch-edges-one-batch")
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := l.Lookup("fetch-edges-one-batch", 0); o.Offset != 3 || o.Timestamp != base+9000 {
			t.Errorf("ListOffsets max timestamp (-3) = offset %d timestamp %d, want offset 3 timestamp %d (the record with the largest timestamp, inside the batch)", o.Offset, o.Timestamp, base+9000)
		}
	})
}
