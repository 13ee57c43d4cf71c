package e2e

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ackedRecord is what a producer was told about one record.
type ackedRecord struct {
	Partition int32
	Offset    int64
	Key       string
	Value     string
}

// ackLog collects acknowledged records from concurrent produce callbacks.
type ackLog struct {
	mu     sync.Mutex
	acked  []ackedRecord
	failed []error
}

func (l *ackLog) callback(r *kgo.Record, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failed = append(l.failed, err)
		return
	}
	l.acked = append(l.acked, ackedRecord{r.Partition, r.Offset, string(r.Key), string(r.Value)})
}

func (l *ackLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

func (l *ackLog) snapshot() ([]ackedRecord, []error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ackedRecord(nil), l.acked...), append([]error(nil), l.failed...)
}

// produceSync produces records with keys and values "<prefix>-i" and returns what was
// acknowledged, failing the test on any error.
func produceSync(t testing.TB, cl *kgo.Client, topic string, prefix string, n int) []ackedRecord {
	t.Helper()
	ctx := ctxFor(t, 60*time.Second)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("%s-key-%d", prefix, i%37)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
	}
	res := cl.ProduceSync(ctx, recs...)
	out := make([]ackedRecord, 0, n)
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("producing record %d of %d to %s: %v", i, n, topic, r.Err)
		}
		out = append(out, ackedRecord{r.Record.Partition, r.Record.Offset, string(r.Record.Key), string(r.Record.Value)})
	}
	return out
}

// consumeFrom reads topic partitions directly (no group) from the given offsets until want
// records arrived or timeout passed, and returns them in arrival order.
func consumeFrom(t testing.TB, cl func(...kgo.Opt) *kgo.Client, topic string, from map[int32]kgo.Offset, want int, timeout time.Duration) []*kgo.Record {
	t.Helper()
	c := cl(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}), kgo.FetchMaxWait(500*time.Millisecond))
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming %s: got %d of %d records within %v", topic, len(out), want, timeout)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("consuming %s[%d]: %v", e.Topic, e.Partition, e.Err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// consumeAll reads every partition in parts from its start until want records arrived.
func consumeAll(t testing.TB, b *Broker, topic string, parts int32, want int) []*kgo.Record {
	t.Helper()
	from := map[int32]kgo.Offset{}
	for p := int32(0); p < parts; p++ {
		from[p] = kgo.NewOffset().AtStart()
	}
	return consumeFrom(t, func(o ...kgo.Opt) *kgo.Client { return b.Client(t, o...) }, topic, from, want, 60*time.Second)
}

// checkAckedReadable asserts that every acknowledged record is found in got, at its
// acknowledged partition and offset, with its key and value.
func checkAckedReadable(t testing.TB, acked []ackedRecord, got []*kgo.Record) {
	t.Helper()
	type po struct {
		p int32
		o int64
	}
	at := map[po]*kgo.Record{}
	for _, r := range got {
		if prev, dup := at[po{r.Partition, r.Offset}]; dup {
			t.Errorf("offset %d of partition %d delivered twice (%q, %q)", r.Offset, r.Partition, prev.Value, r.Value)
		}
		at[po{r.Partition, r.Offset}] = r
	}
	bad := 0
	for _, a := range acked {
		r, ok := at[po{a.Partition, a.Offset}]
		switch {
		case !ok:
			bad++
			if bad <= 10 {
				t.Errorf("acknowledged record %q (key %q) at partition %d offset %d: not read back", a.Value, a.Key, a.Partition, a.Offset)
			}
		case string(r.Value) != a.Value || string(r.Key) != a.Key:
			bad++
			if bad <= 10 {
				t.Errorf("partition %d offset %d: read key %q value %q, but the producer was acknowledged key %q value %q there",
					a.Partition, a.Offset, r.Key, r.Value, a.Key, a.Value)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d acknowledged records are not where they were acknowledged", bad, len(acked))
	}
}

// checkPerPartitionOrder asserts that, per partition, acknowledged offsets increase in
// produce order and cover 0..n-1 with no gap.
func checkPerPartitionOrder(t testing.TB, acked []ackedRecord) {
	t.Helper()
	checkAckOrder(t, acked, true)
}

// checkAckOrder asserts that, per partition, acknowledged offsets increase in produce
// order and, when contiguous, cover 0..n-1 with no gap.
func checkAckOrder(t testing.TB, acked []ackedRecord, contiguous bool) {
	t.Helper()
	last := map[int32]int64{}
	byPart := map[int32][]int64{}
	for _, a := range acked {
		if prev, ok := last[a.Partition]; ok && a.Offset <= prev {
			t.Errorf("partition %d: %q acknowledged at offset %d, not after the previous record's %d", a.Partition, a.Value, a.Offset, prev)
		}
		last[a.Partition] = a.Offset
		byPart[a.Partition] = append(byPart[a.Partition], a.Offset)
	}
	if !contiguous {
		return
	}
	for p, offs := range byPart {
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
		for i, o := range offs {
			if o != int64(i) {
				t.Errorf("partition %d: acknowledged offsets are not 0..%d without gaps: index %d is offset %d", p, len(offs)-1, i, o)
				break
			}
		}
	}
}

// metadataServed asserts that a fresh client gets a Metadata answer naming this broker.
func metadataServed(t testing.TB, b *Broker) {
	t.Helper()
	cl := b.Client(t)
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(ctxFor(t, 15*time.Second), cl)
	if err != nil {
		t.Fatalf("Metadata on a fresh connection: %v", err)
	}
	if len(resp.Brokers) == 0 {
		t.Fatalf("Metadata on a fresh connection lists no brokers")
	}
	cl.Close()
}

func kerrName(code int16) string {
	if code == 0 {
		return "NONE(0)"
	}
	name := "UNKNOWN"
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		name = e.Message
	}
	return fmt.Sprintf("%s(%d)", name, code)
}
