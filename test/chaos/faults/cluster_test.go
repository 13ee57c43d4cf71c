package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/test/harness"
)

type acked struct {
	offset int64
	value  string
}

// produce writes n records with acks=all through cl and returns them with their offsets;
// any failure fails the test.
func produce(t *testing.T, ctx context.Context, cl *kgo.Client, topic, prefix string, n int) []acked {
	t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
	}
	var out []acked
	for i, r := range cl.ProduceSync(ctx, recs...) {
		if r.Err != nil {
			t.Fatalf("producing %s record %d: %v", prefix, i, r.Err)
		}
		out = append(out, acked{r.Record.Offset, string(r.Record.Value)})
	}
	return out
}

// TestHarnessFaults drives each fault of the harness against a 3-broker cluster with an
// RF=3 topic written at acks=all, and checks that every acknowledged record is read back
// at its offset: broker 1 isolated (the majority keeps accepting writes, broker 1
// acknowledges none), healed, a follower paused and resumed, the leader's power cut.
func TestHarnessFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real brokers; skipped with -short")
	}
	logDir, err := os.MkdirTemp("", "cairn-chaos-harness-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs kept in %s", logDir)
			for id := 1; id <= 3; id++ {
				t.Logf("broker %d, last lines:\n%s", id, harness.TailFile(fmt.Sprintf("%s/broker-%d.log", logDir, id), 30))
			}
			return
		}
		os.RemoveAll(logDir)
	})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Second)
	defer cancel()
	begin := time.Now()
	step := func(what string) { t.Logf("%6.2fs %s", time.Since(begin).Seconds(), what) }

	c, err := Start(ctx, Options{N: 3, LogDir: logDir, DataDir: t.TempDir(), SimulatePowerLoss: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	step("cluster started")

	const topic = "chaos"
	newClient := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := c.Client(append([]kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic),
			kgo.RequestTimeoutOverhead(3 * time.Second), kgo.ProduceRequestTimeout(3 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	admCl := newClient()
	resp, err := kadm.NewClient(admCl).CreateTopic(ctx, 1, 3, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
	status := func(id int) (PartitionStatus, bool) {
		st, err := c.PartitionStatus(ctx, id, topic, 0)
		return st, err == nil
	}
	waitCond := func(what string, timeout time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for !cond() {
			if time.Now().After(deadline) || ctx.Err() != nil {
				t.Fatalf("%s: not within %v", what, timeout)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// leader returns the broker that leads with the highest epoch among ids, or 0.
	leader := func(ids ...int) (int, PartitionStatus) {
		best, bst := 0, PartitionStatus{LeaderEpoch: -1}
		for _, id := range ids {
			if st, ok := status(id); ok && st.IsLeader && st.LeaderEpoch > bst.LeaderEpoch {
				best, bst = id, st
			}
		}
		return best, bst
	}
	// inSync waits until every broker's replica has the same log end and commit point.
	inSync := func(what string) {
		t.Helper()
		waitCond(what, 30*time.Second, func() bool {
			var ends, commits []int64
			for id := 1; id <= 3; id++ {
				st, ok := status(id)
				if !ok {
					return false
				}
				ends, commits = append(ends, st.LogEnd), append(commits, st.Committed)
			}
			return ends[0] == ends[1] && ends[1] == ends[2] && commits[0] == ends[0] && commits[1] == ends[0] && commits[2] == ends[0]
		})
	}

	var all []acked
	prod := newClient()
	all = append(all, produce(t, ctx, prod, topic, "before", 100)...)
	inSync("replicas in sync before the partition")
	_, before := leader(1, 2, 3)
	step(fmt.Sprintf("100 records acknowledged; leader epoch %d", before.LeaderEpoch))

	// Broker 1 alone on one side.
	if err := c.Isolate(1); err != nil {
		t.Fatal(err)
	}
	for _, o := range []int{2, 3} {
		if !c.IsCut(1, o) || !c.IsCut(o, 1) {
			t.Fatalf("1 <-> %d not cut", o)
		}
	}
	var majority PartitionStatus
	waitCond("a leader among brokers 2 and 3", 30*time.Second, func() bool {
		var id int
		id, majority = leader(2, 3)
		return id != 0 && (before.IsLeader && before.Leader != 1 || majority.LeaderEpoch > before.LeaderEpoch)
	})
	step(fmt.Sprintf("isolated broker 1; majority leader %d epoch %d", majority.Leader, majority.LeaderEpoch))
	// Writes through brokers 2 and 3 only: this client cannot reach broker 1 at all.
	b1 := c.Broker(1).KafkaAddr
	var d net.Dialer
	viaMajority := newClient(kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		if host == b1 {
			return nil, errors.New("test: broker 1 is off limits")
		}
		return d.DialContext(ctx, network, host)
	}))
	during := produce(t, ctx, viaMajority, topic, "isolated", 100)
	all = append(all, during...)
	// A produce sent to broker 1 itself is never acknowledged: as a stale leader it cannot
	// commit, as a follower it cannot forward.
	only1 := newClient(kgo.SeedBrokers(b1))
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 3000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = kafkatest.Batch{Values: [][]byte{[]byte("via-broker-1")}, Timestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}.Bytes()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	wctx, wcancel := context.WithTimeout(ctx, 8*time.Second)
	var via1 error
	switch raw, err := only1.SeedBrokers()[0].Request(wctx, req); {
	case err != nil:
		via1 = err
	default:
		pr := raw.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if via1 = kerr.ErrorForCode(pr.ErrorCode); via1 == nil {
			t.Errorf("a write sent to isolated broker 1 was acknowledged at offset %d", pr.BaseOffset)
		}
	}
	wcancel()
	// Broker 1 never committed what the majority acknowledged, and leads (if it still
	// thinks so) only in an older epoch.
	if st, ok := status(1); !ok {
		t.Error("broker 1 admin API unreachable while isolated")
	} else {
		if st.Committed > during[0].offset {
			t.Errorf("isolated broker 1 committed up to %d, past the majority's first write at %d", st.Committed, during[0].offset)
		}
		if st.IsLeader && st.LeaderEpoch >= majority.LeaderEpoch {
			t.Errorf("isolated broker 1 leads in epoch %d, the majority's leader in %d", st.LeaderEpoch, majority.LeaderEpoch)
		}
	}
	step(fmt.Sprintf("100 records acknowledged by the majority; write sent to broker 1: %v", via1))

	c.HealAll()
	inSync("broker 1 caught up after healing")
	step("healed; replicas in sync")

	// Pause a follower: the other two keep acknowledging.
	lid, _ := leader(1, 2, 3)
	follower := 1 + lid%3
	if err := c.Pause(follower); err != nil {
		t.Fatal(err)
	}
	all = append(all, produce(t, ctx, prod, topic, "paused", 100)...)
	if err := c.Resume(follower); err != nil {
		t.Fatal(err)
	}
	inSync("paused follower caught up")
	step(fmt.Sprintf("paused and resumed broker %d", follower))

	// Power loss of the leader.
	lid, _ = leader(1, 2, 3)
	if lid == 0 {
		t.Fatal("no leader")
	}
	if err := c.PowerLoss(ctx, lid); err != nil {
		t.Fatal(err)
	}
	step(fmt.Sprintf("power loss of broker %d done", lid))
	all = append(all, produce(t, ctx, prod, topic, "after", 100)...)
	inSync("replicas in sync after the power loss")
	step("400 records acknowledged in all")

	// Every acknowledged record, at its offset.
	hwm := all[len(all)-1].offset + 1
	cons := newClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	at := map[int64]string{}
	for int64(len(at)) < hwm && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		for _, e := range fs.Errors() {
			if ctx.Err() == nil {
				t.Fatalf("fetch: %v", e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			if prev, dup := at[r.Offset]; dup {
				t.Errorf("offset %d read twice (%q, %q)", r.Offset, prev, r.Value)
			}
			at[r.Offset] = string(r.Value)
		})
	}
	bad := 0
	for _, a := range all {
		if got, ok := at[a.offset]; !ok || got != a.value {
			bad++
			if bad <= 10 {
				t.Errorf("acknowledged %q at offset %d, read %q (present %v)", a.value, a.offset, got, ok)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d acknowledged records not read back at their offsets", bad, len(all))
	}
	for id := 1; id <= 3; id++ {
		s := c.ProxyStats(id)
		t.Logf("proxy of broker %d: %+v", id, s)
		if s.BadHello != 0 {
			t.Errorf("proxy of broker %d saw %d connections it could not attribute", id, s.BadHello)
		}
	}
	step(fmt.Sprintf("read back %d records; every one of %d acknowledged in place", len(at), len(all)))
}
