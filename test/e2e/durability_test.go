package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

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

// TestKill9UnderLoad: an acks=all idempotent producer writes in a loop; the broker is
// killed with SIGKILL mid-stream and restarted; every record that was acknowledged before
// (or after) the kill is read back at its acknowledged offset, and nothing is duplicated.
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
	waitFor(t, 60*time.Second, func() bool { return log.count() >= 1500 })
	b.Kill9()
	ackedAtKill := log.count()
	close(stop)
	b.Restart()
	wg.Wait()

	// The producer retries what was in flight; every record ends acknowledged or failed.
	if err := prod.Flush(ctxFor(t, 60*time.Second)); err != nil {
		t.Fatalf("producer flush after the restart: %v", err)
	}
	acked, failed := log.snapshot()
	t.Logf("produced %d records; %d acknowledged before the kill, %d in all; %d failed", produced, ackedAtKill, len(acked), len(failed))
	if len(failed) > 0 {
		t.Logf("first failure after the restart: %v", failed[0])
	}
	checkPerPartitionOrder(t, acked)

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
			t.Errorf("partition %d: high watermark %d after the restart, below acknowledged offset %d", p, ends[p], m-1)
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
