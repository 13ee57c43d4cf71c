package kafka

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

// Transactional produce is not served yet: these tests write transactional batches and
// their markers into the partition's log themselves (partition.AppendForTest), as the
// transaction coordinator will, and read them back through the Kafka API.

// txnLog writes raw batches into partition 0 of a topic.
type txnLog struct {
	t     *testing.T
	b     *broker.Broker
	topic string
}

func (l txnLog) append(batch []byte) {
	l.t.Helper()
	p, kerrv := l.b.Partition(l.topic, 0)
	if kerrv != nil {
		l.t.Fatal(kerrv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.AppendForTest(ctx, batch); err != nil {
		l.t.Fatal(err)
	}
}

// txn appends a transactional batch of producer pid holding values.
func (l txnLog) txn(pid int64, values ...string) {
	l.t.Helper()
	b := kafkatest.Batch{Timestamp: time.Now().UnixMilli(), ProducerID: pid, BaseSequence: 0, Attributes: recordbatch.AttrTransactional}
	for _, v := range values {
		b.Values = append(b.Values, []byte(v))
	}
	l.append(b.Bytes())
}

// plain appends a non-transactional batch of values.
func (l txnLog) plain(values ...string) {
	l.t.Helper()
	b := kafkatest.Batch{Timestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	for _, v := range values {
		b.Values = append(b.Values, []byte(v))
	}
	l.append(b.Bytes())
}

// end appends producer pid's commit or abort marker.
func (l txnLog) end(pid int64, typ recordbatch.ControlType) {
	l.t.Helper()
	now := time.Now().UnixMilli()
	h := recordbatch.PlainHeader(now, now)
	h.ProducerID = pid
	l.append(recordbatch.EncodeControl(h, typ, 0))
}

// isolatedFetch is a consumer's Fetch of partition 0 of topic from offset at an isolation
// level, answered at once.
func isolatedFetch(topic string, offset int64, level int8) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.IsolationLevel = -1, 1<<20, level
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = offset, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// fetchedPartition is the one partition of a Fetch answer, failing the test on an error.
func fetchedPartition(t *testing.T, resp *kmsg.FetchResponse) kmsg.FetchResponseTopicPartition {
	t.Helper()
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch: %v with %d topics", kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("fetch: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	return p
}

// latestOffset is ListOffsets latest for partition 0 of topic at an isolation level.
func latestOffset(t *testing.T, cl *kgo.Client, topic string, level int8) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID, req.IsolationLevel = -1, level
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

// consumed is what a consumer polls within d, as "offset:value".
func consumed(t *testing.T, cl *kgo.Client, want int, d time.Duration) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out []string
	for want < 0 || len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("%s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { out = append(out, fmt.Sprintf("%d:%s", r.Offset, r.Value)) })
	}
	return out
}

func consumer(t *testing.T, addr, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	// From the start unless opts say otherwise: the last option given wins.
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// read_committed and read_uncommitted consumers (kgo) of one log: an open transaction holds
// read_committed back at its first batch (ListOffsets latest says so too) while
// read_uncommitted reads on; its commit releases the records; an aborted transaction's
// records reach read_uncommitted only, read_committed being told of it in
// AbortedTransactions; and the control batches are skipped, so a consumer is not stuck
// at a marker that ends the log. Records leave the segment files by copy and by sendfile.
func TestReadCommittedConsumers(t *testing.T) {
	for _, minBytes := range []int64{sendfileMinBytes, 0} {
		t.Run(fmt.Sprint("sendfile-from-", minBytes), func(t *testing.T) {
			defer func(v int64) { sendfileMinBytes = v }(sendfileMinBytes)
			sendfileMinBytes = minBytes
			addr, b := startBroker(t)
			createTopic(t, addr, "txn", 1, 0)
			log := txnLog{t, b, "txn"}
			committed := consumer(t, addr, "txn", kgo.FetchIsolationLevel(kgo.ReadCommitted()))
			uncommitted := consumer(t, addr, "txn")
			raw, err := kgo.NewClient(kgo.SeedBrokers(addr))
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()

			log.plain("a")         // 0
			log.txn(7, "t1", "t2") // 1-2, open
			log.plain("b")         // 3
			if got := consumed(t, uncommitted, 4, 10*time.Second); !slices.Equal(got, []string{"0:a", "1:t1", "2:t2", "3:b"}) {
				t.Fatalf("read_uncommitted during the transaction: %v", got)
			}
			if got := consumed(t, committed, -1, time.Second); !slices.Equal(got, []string{"0:a"}) {
				t.Fatalf("read_committed during the transaction: %v", got)
			}
			if off, code := latestOffset(t, raw, "txn", 1); off != 1 || code != 0 {
				t.Fatalf("ListOffsets latest, read_committed: %d (%v), want 1", off, kerr.ErrorForCode(code))
			}
			if off, _ := latestOffset(t, raw, "txn", 0); off != 4 {
				t.Fatalf("ListOffsets latest, read_uncommitted: %d, want 4", off)
			}
			p := fetchedPartition(t, fetchWith(t, raw, isolatedFetch("txn", 0, 0)))
			if p.LastStableOffset != 1 || p.HighWatermark != 4 || p.AbortedTransactions != nil {
				t.Fatalf("read_uncommitted fetch: lso %d, hw %d, aborted %v", p.LastStableOffset, p.HighWatermark, p.AbortedTransactions)
			}

			log.end(7, recordbatch.ControlCommit) // 4
			if got := consumed(t, committed, 3, 10*time.Second); !slices.Equal(got, []string{"1:t1", "2:t2", "3:b"}) {
				t.Fatalf("read_committed after the commit: %v", got)
			}

			log.txn(8, "x1", "x2")               // 5-6
			log.end(8, recordbatch.ControlAbort) // 7
			log.plain("c")                       // 8
			if got := consumed(t, uncommitted, 3, 10*time.Second); !slices.Equal(got, []string{"5:x1", "6:x2", "8:c"}) {
				t.Fatalf("read_uncommitted after the abort: %v", got)
			}
			if got := consumed(t, committed, 1, 10*time.Second); !slices.Equal(got, []string{"8:c"}) {
				t.Fatalf("read_committed after the abort: %v", got)
			}
			p = fetchedPartition(t, fetchWith(t, raw, isolatedFetch("txn", 5, 1)))
			if len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != 8 || p.AbortedTransactions[0].FirstOffset != 5 || p.LastStableOffset != 9 {
				t.Fatalf("read_committed fetch from 5: aborted %+v, lso %d", p.AbortedTransactions, p.LastStableOffset)
			}
			p = fetchedPartition(t, fetchWith(t, raw, isolatedFetch("txn", 8, 1)))
			if p.AbortedTransactions == nil || len(p.AbortedTransactions) != 0 {
				t.Fatalf("read_committed fetch past the abort: aborted %+v, want an empty array", p.AbortedTransactions)
			}

			log.txn(9, "y")                       // 9
			log.end(9, recordbatch.ControlCommit) // 10: the log ends with a marker
			if got := consumed(t, committed, 1, 10*time.Second); !slices.Equal(got, []string{"9:y"}) {
				t.Fatalf("read_committed of a transaction ending the log: %v", got)
			}
			log.plain("d") // 11
			if got := consumed(t, committed, 1, 10*time.Second); !slices.Equal(got, []string{"11:d"}) {
				t.Fatalf("read_committed past the last marker: %v", got)
			}
		})
	}
}

// A read_committed long poll waiting at the last stable offset (below the high watermark)
// is answered as soon as the commit marker lands, not when its wait runs out; one at an
// offset between the last stable offset and the high watermark gets no records and no
// error, and one past the log end OFFSET_OUT_OF_RANGE.
func TestReadCommittedLongPollWakesOnCommit(t *testing.T) {
	srv, b, addr := serveTestBroker(t, quickGroups, nil)
	createTopic(t, addr, "lp", 1, 0)
	log := txnLog{t, b, "lp"}
	raw, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	log.txn(3, "t1", "t2") // 0-1, open
	log.plain("a")         // 2

	p := fetchedPartition(t, fetchWith(t, raw, isolatedFetch("lp", 1, 1)))
	if len(p.RecordBatches) != 0 || p.LastStableOffset != 0 || p.HighWatermark != 3 {
		t.Fatalf("read_committed between the bounds: %d record bytes, lso %d, hw %d", len(p.RecordBatches), p.LastStableOffset, p.HighWatermark)
	}
	if resp := fetchWith(t, raw, isolatedFetch("lp", 4, 1)); resp.Topics[0].Partitions[0].ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("read_committed past the log end: %v", kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}

	poll := isolatedFetch("lp", 0, 1)
	poll.MaxWaitMillis, poll.MinBytes = 20000, 1
	done := make(chan *kmsg.FetchResponse, 1)
	start := time.Now()
	go func() {
		resp, err := poll.RequestWith(context.Background(), raw)
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	waitUntil(t, "the long poll parks", 10*time.Second, func() bool { return srv.parkedFetches.Load() == 1 })
	select {
	case <-done:
		t.Fatal("the long poll was answered before the transaction ended")
	default:
	}
	log.end(3, recordbatch.ControlCommit) // 3
	resp := <-done
	if resp == nil {
		return
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("answered after %v: the commit did not wake the long poll", waited)
	}
	if p := fetchedPartition(t, resp); len(p.RecordBatches) == 0 || p.LastStableOffset != 4 {
		t.Fatalf("after the commit: %d record bytes, lso %d", len(p.RecordBatches), p.LastStableOffset)
	}
}

// An isolation level other than 0 or 1 refuses the whole Fetch (top-level from v7, on every
// partition in all versions) and every partition of ListOffsets with INVALID_REQUEST; the
// broker serves on.
func TestIsolationLevelBadInput(t *testing.T) {
	addr, _ := startBroker(t)
	createTopic(t, addr, "iso", 1, 2)
	for _, v := range []int16{4, 7, 12} {
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(kmsg.Fetch.Int16(), v)
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(vs))
		if err != nil {
			t.Fatal(err)
		}
		for _, level := range []int8{2, -1, 127} {
			resp := fetchWith(t, cl, isolatedFetch("iso", 0, level))
			if v >= 7 && resp.ErrorCode != kerr.InvalidRequest.Code {
				t.Fatalf("fetch v%d, isolation level %d: top-level %v", v, level, kerr.ErrorForCode(resp.ErrorCode))
			}
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("fetch v%d, isolation level %d: %d topics", v, level, len(resp.Topics))
			}
			if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.InvalidRequest.Code || len(p.RecordBatches) != 0 {
				t.Fatalf("fetch v%d, isolation level %d: %v with %d record bytes", v, level, kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
			}
			if _, code := latestOffset(t, cl, "iso", level); code != kerr.InvalidRequest.Code {
				t.Fatalf("ListOffsets, isolation level %d: %v", level, kerr.ErrorForCode(code))
			}
		}
		for _, level := range []int8{0, 1} {
			if p := fetchedPartition(t, fetchWith(t, cl, isolatedFetch("iso", 0, level))); len(p.RecordBatches) == 0 || p.LastStableOffset != 2 {
				t.Fatalf("fetch v%d, isolation level %d: %d record bytes, lso %d", v, level, len(p.RecordBatches), p.LastStableOffset)
			}
		}
		cl.Close()
	}
}

// A read_committed consumer that starts at the end starts at the last stable offset (kgo
// asks ListOffsets latest with its isolation level), so it gets an open transaction's
// records once the transaction commits; a read_uncommitted one starts past them.
func TestReadCommittedStartsAtTheLastStableOffset(t *testing.T) {
	addr, b := startBroker(t)
	createTopic(t, addr, "end", 1, 0)
	log := txnLog{t, b, "end"}
	log.txn(4, "t1", "t2") // 0-1, open
	log.plain("a")         // 2
	atEnd := kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd())
	committed := consumer(t, addr, "end", atEnd, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	uncommitted := consumer(t, addr, "end", atEnd)
	// Both have started (listed their offsets) once a poll has come back empty.
	if got := consumed(t, committed, -1, time.Second); len(got) != 0 {
		t.Fatalf("read_committed before the commit: %v", got)
	}
	if got := consumed(t, uncommitted, -1, time.Second); len(got) != 0 {
		t.Fatalf("read_uncommitted at the end: %v", got)
	}
	log.end(4, recordbatch.ControlCommit) // 3
	log.plain("b")                        // 4
	if got := consumed(t, committed, 4, 10*time.Second); !slices.Equal(got, []string{"0:t1", "1:t2", "2:a", "4:b"}) {
		t.Fatalf("read_committed after the commit: %v", got)
	}
	if got := consumed(t, uncommitted, 1, 10*time.Second); !slices.Equal(got, []string{"4:b"}) {
		t.Fatalf("read_uncommitted after the commit: %v", got)
	}
}
