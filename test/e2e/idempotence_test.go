package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIdempotentProducerAcrossRestart: an idempotent producer keeps producing across a
// broker restart (same producer id, sequences continue), then a new producer adds more;
// the log holds every record exactly once, in order.
func TestIdempotentProducerAcrossRestart(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "idem-restart"
	createTopic(t, b.Admin(t), topic, 1, nil)

	p1 := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	acked := produceSync(t, p1, topic, "p1-before", 100)
	b.Restart()
	acked = append(acked, produceSync(t, p1, topic, "p1-after", 100)...)
	p1.Close()
	p2 := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	acked = append(acked, produceSync(t, p2, topic, "p2", 100)...)
	checkPerPartitionOrder(t, acked)

	if ends := endOffsets(t, b.Admin(t), topic); ends[0] != 300 {
		t.Errorf("end offset %d after 300 acknowledged records, want 300", ends[0])
	}
	got := consumeAll(t, b, topic, 1, 300)
	checkAckedReadable(t, acked, got)
	seen := map[string]bool{}
	for _, r := range got {
		if seen[string(r.Value)] {
			t.Errorf("%q stored twice", r.Value)
		}
		seen[string(r.Value)] = true
	}
}

// rawProducer sends hand-built idempotent batches through kgo.Client.Request.
type rawProducer struct {
	t     *testing.T
	cl    *kgo.Client
	topic string
	pid   int64
	epoch int16
}

func (rp *rawProducer) batch(seq int32, n int, tag string) []byte {
	s := batchSpec{producerID: rp.pid, producerEpoch: rp.epoch, firstSequence: seq}
	for i := 0; i < n; i++ {
		s.records = append(s.records, kv{value: []byte(fmt.Sprintf("%s-seq%d", tag, seq+int32(i)))})
	}
	return buildBatch(s)
}

func (rp *rawProducer) send(batch []byte) kmsg.ProduceResponseTopicPartition {
	rp.t.Helper()
	req := produceRequest(9, -1, rp.topic, 0, batch)
	resp, err := rp.cl.Request(ctxFor(rp.t, 30*time.Second), req)
	if err != nil {
		rp.t.Fatalf("Produce request: %v", err)
	}
	p, err := producePartitionResponse(resp)
	if err != nil {
		rp.t.Fatal(err)
	}
	return p
}

// TestRawIdempotentProduce: batches with an explicit producer id from InitProducerId.
// A resent batch answers with its original base offset and is stored once; a sequence gap
// is OUT_OF_ORDER_SEQUENCE_NUMBER; after a restart (clean, then kill -9) the last batch
// resent still answers with its original offset.
func TestRawIdempotentProduce(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "idem-raw"
	adm := b.Admin(t)
	createTopic(t, adm, topic, 1, nil)
	cl := b.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()))

	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionTimeoutMillis = 60000
	iresp, err := init.RequestWith(ctxFor(t, 15*time.Second), cl)
	if err != nil {
		t.Fatalf("InitProducerId: %v", err)
	}
	if iresp.ErrorCode != 0 || iresp.ProducerID < 0 {
		t.Fatalf("InitProducerId: error %s, producer id %d", kerrName(iresp.ErrorCode), iresp.ProducerID)
	}
	rp := &rawProducer{t: t, cl: cl, topic: topic, pid: iresp.ProducerID, epoch: iresp.ProducerEpoch}

	expect := func(what string, got kmsg.ProduceResponseTopicPartition, code int16, base int64) {
		t.Helper()
		if got.ErrorCode != code || (code == 0 && got.BaseOffset != base) {
			msg := ""
			if got.ErrorMessage != nil {
				msg = *got.ErrorMessage
			}
			t.Errorf("%s: got %s base offset %d %q; want %s base offset %d", what, kerrName(got.ErrorCode), got.BaseOffset, msg, kerrName(code), base)
		}
	}
	end := func() int64 { return endOffsets(t, adm, topic)[0] }

	b0 := rp.batch(0, 3, "a")
	expect("first batch (seq 0..2)", rp.send(b0), 0, 0)
	expect("same batch again", rp.send(b0), 0, 0)
	if e := end(); e != 3 {
		t.Errorf("end offset %d after a batch of 3 sent twice, want 3", e)
	}
	b1 := rp.batch(3, 2, "a")
	expect("second batch (seq 3..4)", rp.send(b1), 0, 3)
	expect("first batch again, one batch back", rp.send(b0), 0, 0)
	expect("second batch again", rp.send(b1), 0, 3)

	gap := rp.batch(50, 1, "gap")
	expect("batch with seq 50 after 4 (gap)", rp.send(gap), 45, 0)
	if e := end(); e != 5 {
		t.Errorf("end offset %d after the rejected gap batch, want 5", e)
	}

	// A new producer's first batch must start at sequence 0.
	iresp2, err := init.RequestWith(ctxFor(t, 15*time.Second), cl)
	if err != nil || iresp2.ErrorCode != 0 {
		t.Fatalf("second InitProducerId: %v %s", err, kerrName(iresp2.ErrorCode))
	}
	if iresp2.ProducerID == rp.pid {
		t.Errorf("two InitProducerId calls without a transactional id returned the same producer id %d", rp.pid)
	}
	fresh := &rawProducer{t: t, cl: cl, topic: topic, pid: iresp2.ProducerID, epoch: iresp2.ProducerEpoch}
	if p := fresh.send(fresh.batch(7, 1, "fresh")); p.ErrorCode != 45 && p.ErrorCode != 59 {
		t.Errorf("a new producer's first batch at sequence 7: %s base offset %d, want %s or %s",
			kerrName(p.ErrorCode), p.BaseOffset, kerrName(45), kerrName(59))
	}
	if e := end(); e != 5 {
		t.Errorf("end offset %d after the refused first batch at sequence 7, want 5", e)
	}

	b.Restart()
	expect("second batch again after a clean restart", rp.send(b1), 0, 3)
	b2 := rp.batch(5, 4, "a")
	expect("next batch (seq 5..8) after the restart", rp.send(b2), 0, 5)
	expect("gap batch after the restart", rp.send(gap), 45, 0)

	b.Kill9()
	b.Restart()
	expect("last batch again after kill -9 and restart", rp.send(b2), 0, 5)
	if e := end(); e != 9 {
		t.Errorf("end offset %d, want 9 (3+2+4 records, each batch stored once)", e)
	}
	got := consumeAll(t, b, topic, 1, 9)
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("a-seq%d", i) {
			t.Errorf("offset %d holds %q (record at index %d); want a-seq%d", r.Offset, r.Value, i, i)
		}
	}
}
