package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCleanRestart: after SIGTERM (exit 0) and a start on the same data directory, every
// record is still there at its offset, and new records continue the offsets.
func TestCleanRestart(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic, parts = "restart", 2
	createTopic(t, b.Admin(t), topic, parts, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic))
	acked := produceSync(t, prod, topic, "before", 400)
	prod.Close()
	before := endOffsets(t, b.Admin(t), topic)
	stBefore := map[int32]PartitionStatus{}
	for p := int32(0); p < parts; p++ {
		stBefore[p] = b.Partition(t, topic, p)
	}

	b.Restart()

	after := endOffsets(t, b.Admin(t), topic)
	for p := int32(0); p < parts; p++ {
		if after[p] != before[p] {
			t.Errorf("partition %d: end offset %d before the restart, %d after", p, before[p], after[p])
		}
		st := b.Partition(t, topic, p)
		if st.LogEnd != stBefore[p].LogEnd || st.LastVisible != stBefore[p].LastVisible || st.LogStart != stBefore[p].LogStart {
			t.Errorf("partition %d: admin status before restart %+v, after %+v", p, stBefore[p], st)
		}
	}
	checkAckedReadable(t, acked, consumeAll(t, b, topic, parts, len(acked)))

	prod = b.Client(t, kgo.DefaultProduceTopic(topic))
	more := produceSync(t, prod, topic, "after", 200)
	first := map[int32]int64{}
	for _, a := range more {
		if _, ok := first[a.Partition]; !ok {
			first[a.Partition] = a.Offset
		}
	}
	for p, o := range first {
		if o != before[p] {
			t.Errorf("partition %d: first record after the restart got offset %d, want %d (the end before the restart)", p, o, before[p])
		}
	}
	all := append(append([]ackedRecord(nil), acked...), more...)
	checkPerPartitionOrder(t, all)
	checkAckedReadable(t, all, consumeAll(t, b, topic, parts, len(all)))
}

// TestKill9UnderLoad: an acks=all idempotent producer writes in a loop while the broker is
// killed with SIGKILL, stopped with SIGTERM and killed again, each time restarted on the
// same data; every record acknowledged at any point is read back at its acknowledged
// offset, nothing is stored twice, and the producer carries on after each restart.
func TestKill9UnderLoad(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic, parts = "kill9", 2
	createTopic(t, b.Admin(t), topic, parts, nil)

	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(45*time.Second), kgo.MaxBufferedRecords(200))
	var log ackLog
	stop := make(chan struct{})
	var wg sync.WaitGroup
	produced := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx := context.Background()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Produce blocks while 200 records are buffered, which paces the loop.
			prod.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i%13)), Value: []byte(fmt.Sprintf("v-%07d", i))}, log.callback)
			produced = i + 1
		}
	}()
	stopLoop := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(func() { prod.Close(); stopLoop() })

	for cycle, how := range []string{"kill -9", "SIGTERM", "kill -9"} {
		target := log.count() + 1000
		waitFor(t, 60*time.Second, func() bool { return log.count() >= target })
		if how == "kill -9" {
			b.Kill9()
		}
		t.Logf("cycle %d: %s with %d records acknowledged", cycle, how, log.count())
		b.Restart() // SIGTERM (exit 0 required) unless already killed
	}
	target := log.count() + 500
	waitFor(t, 60*time.Second, func() bool { return log.count() >= target })
	stopLoop()

	// Every record ends acknowledged or failed.
	if err := prod.Flush(ctxFor(t, 60*time.Second)); err != nil {
		t.Fatalf("producer flush: %v", err)
	}
	acked, failed := log.snapshot()
	t.Logf("produced %d records; %d acknowledged, %d failed", produced, len(acked), len(failed))
	if len(failed) > 0 {
		t.Logf("first failure: %v", failed[0])
	}
	// With no failure the acknowledged offsets of a partition are exactly 0..n-1.
	checkAckOrder(t, acked, len(failed) == 0)

	ends := endOffsets(t, b.Admin(t), topic)
	var total int64
	for _, e := range ends {
		total += e
	}
	maxAcked := map[int32]int64{}
	for _, a := range acked {
		if a.Offset+1 > maxAcked[a.Partition] {
			maxAcked[a.Partition] = a.Offset + 1
		}
	}
	for p, m := range maxAcked {
		if ends[p] < m {
			t.Errorf("partition %d: high watermark %d, below acknowledged offset %d", p, ends[p], m-1)
		}
	}
	got := consumeAll(t, b, topic, parts, int(total))
	checkAckedReadable(t, acked, got)
	seen := map[string]int64{}
	for _, r := range got {
		if prev, dup := seen[string(r.Value)]; dup {
			t.Errorf("%q stored twice, at offsets %d and %d of partition %d (idempotent producer)", r.Value, prev, r.Offset, r.Partition)
		}
		seen[string(r.Value)] = r.Offset
	}

	// A new producer appends after the recovered log.
	p2 := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	res := p2.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Partition: 0, Value: []byte("after-recovery")})
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce after recovery: %v", err)
	}
	if off := res[0].Record.Offset; off != ends[0] {
		t.Errorf("record produced after recovery got offset %d, want the end offset %d", off, ends[0])
	}
}

// TestKill9AfterAdmin: admin changes that were acknowledged (topic creation with a config,
// partition increase, config change, topic deletion, DeleteRecords) survive kill -9.
func TestKill9AfterAdmin(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	adm := b.Admin(t)
	ctx := ctxFor(t, 60*time.Second)
	ret := "7200000"
	createTopic(t, adm, "kept", 2, map[string]*string{"retention.ms": &ret})
	if cr, err := adm.UpdatePartitions(ctx, 4, "kept"); err != nil {
		t.Fatal(err)
	} else if r, err := cr.On("kept", nil); err != nil || r.Err != nil {
		t.Fatalf("CreatePartitions kept → 4: %v %v", err, r.Err)
	}
	alt, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.bytes", Value: kadm.StringPtr("987654321")}}, "kept")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := alt.On("kept", nil); err != nil || r.Err != nil {
		t.Fatalf("alter config: %v %v", err, r.Err)
	}
	createTopic(t, adm, "dropped", 1, nil)
	if r, err := adm.DeleteTopic(ctx, "dropped"); err != nil || r.Err != nil {
		t.Fatalf("DeleteTopics dropped: %v %v", err, r.Err)
	}
	createTopic(t, adm, "trimmed", 1, nil)
	produceSync(t, b.Client(t, kgo.DefaultProduceTopic("trimmed")), "trimmed", "t", 10)
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "trimmed", Partition: 0, At: 4})
	if dr, err := adm.DeleteRecords(ctx, offs); err != nil {
		t.Fatal(err)
	} else if r, err := dr.On("trimmed", 0, nil); err != nil || r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("DeleteRecords trimmed before 4: %+v %v", r, err)
	}

	b.Kill9()
	b.Restart()

	tds, err := adm.ListTopics(ctxFor(t, 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tds["kept"].Partitions); n != 4 {
		t.Errorf("after kill -9: kept has %d partitions, want 4", n)
	}
	if tds.Has("dropped") {
		t.Errorf("after kill -9: the deleted topic 'dropped' is back")
	}
	rcs, err := adm.DescribeTopicConfigs(ctxFor(t, 15*time.Second), "kept")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("kept", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("DescribeConfigs kept: %v %v", err, rc.Err)
	}
	want := map[string]string{"retention.ms": ret, "retention.bytes": "987654321"}
	for _, c := range rc.Configs {
		if w, ok := want[c.Key]; ok && c.MaybeValue() != w {
			t.Errorf("after kill -9: kept %s = %q, want %q", c.Key, c.MaybeValue(), w)
		}
	}
	if o := startOffsets(t, adm, "trimmed")[0]; o != 4 {
		t.Errorf("after kill -9: trimmed log start offset %d, want 4 (DeleteRecords was acknowledged)", o)
	}
	if o := endOffsets(t, adm, "trimmed")[0]; o != 10 {
		t.Errorf("after kill -9: trimmed end offset %d, want 10", o)
	}
}
