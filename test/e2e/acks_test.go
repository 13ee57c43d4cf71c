package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAcksZero: an acks=0 producer gets no answer, but the broker still appends; the
// records become readable.
func TestAcksZero(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic, n = "acks0", 50
	adm := b.Admin(t)
	createTopic(t, adm, topic, 1, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	for i := 0; i < n; i++ {
		if err := prod.ProduceSync(ctxFor(t, 15*time.Second), &kgo.Record{Value: []byte(fmt.Sprintf("zero-%d", i))}).FirstErr(); err != nil {
			t.Fatalf("acks=0 produce %d: %v", i, err)
		}
	}
	waitFor(t, 20*time.Second, func() bool { return endOffsets(t, adm, topic)[0] >= n })
	if e := endOffsets(t, adm, topic)[0]; e != n {
		t.Errorf("end offset %d after %d acks=0 records, want %d", e, n, n)
	}
	got := consumeAll(t, b, topic, 1, n)
	for i, r := range got {
		if want := fmt.Sprintf("zero-%d", i); string(r.Value) != want || r.Offset != int64(i) {
			t.Errorf("offset %d holds %q, want %q at offset %d", r.Offset, r.Value, want, i)
		}
	}
}

// TestAcksOne: acks=1 succeeds and the records are readable.
func TestAcksOne(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "acks1"
	createTopic(t, b.Admin(t), topic, 2, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	acked := produceSync(t, prod, topic, "one", 200)
	checkPerPartitionOrder(t, acked)
	checkAckedReadable(t, acked, consumeAll(t, b, topic, 2, len(acked)))
}

// TestWriteCachingAcksAll: on a topic with write.caching=true, acks=all succeeds and the
// records are readable; the admin API says write caching is on.
func TestWriteCachingAcksAll(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "write-caching"
	on := "true"
	createTopic(t, b.Admin(t), topic, 1, map[string]*string{"write.caching": &on})
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	acked := produceSync(t, prod, topic, "wc", 300)
	// One record at a time too: no ack may wait on a flush timer nothing arms.
	for i := 0; i < 20; i++ {
		start := time.Now()
		acked = append(acked, produceSync(t, prod, topic, fmt.Sprintf("wc-single%d", i), 1)...)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("a single acks=all record on a write-caching topic took %v", d)
		}
	}
	checkPerPartitionOrder(t, acked)
	checkAckedReadable(t, acked, consumeAll(t, b, topic, 1, len(acked)))
	st := b.Partition(t, topic, 0)
	if st.WriteCaching == nil || !*st.WriteCaching {
		t.Errorf("admin API write_caching = %v for a topic created with write.caching=true", st.WriteCaching)
	}
	if st.LastVisible != int64(len(acked)) {
		t.Errorf("last_visible_offset %d, want %d", st.LastVisible, len(acked))
	}
	// The background flush catches up without further writes.
	waitFor(t, 10*time.Second, func() bool { return b.Partition(t, topic, 0).Flushed == int64(len(acked)) })
}

// TestStrictAcksAllIsFlushed: with write caching off (the default), an acks=all success
// means the record is fsynced and committed: the admin API's boundaries say so at once.
func TestStrictAcksAllIsFlushed(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "strict"
	createTopic(t, b.Admin(t), topic, 1, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := 0; i < 25; i++ {
		a := produceSync(t, prod, topic, fmt.Sprintf("strict%d", i), 1+i%3)
		last := a[len(a)-1].Offset
		st := b.Partition(t, topic, 0)
		if st.Flushed < last+1 || st.Committed < last+1 || st.LastVisible < last+1 || st.LogEnd < last+1 {
			t.Fatalf("after acks=all success of offset %d: flushed %d, committed %d, last visible %d, log end %d; want all >= %d",
				last, st.Flushed, st.Committed, st.LastVisible, st.LogEnd, last+1)
		}
		if st.WriteCaching != nil && *st.WriteCaching {
			t.Fatalf("admin API says write caching is on for a default topic")
		}
	}
	// The same boundaries as Prometheus gauges.
	st := b.Partition(t, topic, 0)
	labels := `{partition="0",topic="strict"}`
	for name, want := range map[string]int64{
		"cairn_partition_log_end_offset":      st.LogEnd,
		"cairn_partition_flushed_offset":      st.Flushed,
		"cairn_partition_committed_offset":    st.Committed,
		"cairn_partition_last_visible_offset": st.LastVisible,
		"cairn_partition_log_start_offset":    st.LogStart,
	} {
		v, ok := b.Metric(t, name, labels)
		if !ok || int64(v) != want {
			t.Errorf("/metrics %s%s = %v (present: %v), admin API says %d", name, labels, v, ok, want)
		}
	}
}
