package kafka

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
)

// startBroker runs a broker and its Kafka server in-process on a loopback port, with group
// settings that keep client tests quick.
func startBroker(t *testing.T) (string, *broker.Broker) {
	t.Helper()
	_, b, addr := serveTestBroker(t, quickGroups, nil)
	return addr, b
}

func createTopic(t *testing.T, addr, topic string, partitions int32, records int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, topic, 0, records)
}

func produce(t *testing.T, cl *kgo.Client, topic string, from, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var rs []*kgo.Record
	for i := from; i < from+n; i++ {
		rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// seen records which values arrived and who owns which partitions.
type seen struct {
	mu     sync.Mutex
	values map[string]int
	owner  map[int32]string
	errs   []string
}

func (s *seen) assign(who string, ps map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, list := range ps {
		for _, p := range list {
			if o, ok := s.owner[p]; ok && o != who {
				s.errs = append(s.errs, fmt.Sprintf("partition %d assigned to %s while %s owns it", p, who, o))
			}
			s.owner[p] = who
		}
	}
}

func (s *seen) revoke(who string, ps map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, list := range ps {
		for _, p := range list {
			if s.owner[p] == who {
				delete(s.owner, p)
			}
		}
	}
}

func (s *seen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.values)
}

func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFranzGoCooperativeStickyGroup runs two franz-go group consumers with the
// cooperative-sticky balancer: they split the partitions without overlap, commit, and when
// one leaves the other takes over its partitions and resumes from the commits.
func TestFranzGoCooperativeStickyGroup(t *testing.T) {
	addr, _ := startBroker(t)
	const topic, group = "orders", "franz"
	createTopic(t, addr, topic, 4, 200)
	s := &seen{values: map[string]int{}, owner: map[int32]string{}}
	consumer := func(name string) (*kgo.Client, chan struct{}) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.SessionTimeout(6*time.Second),
			kgo.HeartbeatInterval(300*time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.ClientID(name),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { s.assign(name, ps) }),
			kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, ps map[string][]int32) {
				cl.CommitMarkedOffsets(ctx)
				s.revoke(name, ps)
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { s.revoke(name, ps) }),
			kgo.AutoCommitMarks())
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				fs := cl.PollFetches(context.Background())
				if fs.IsClientClosed() {
					return
				}
				fs.EachRecord(func(r *kgo.Record) {
					s.mu.Lock()
					if o := s.owner[r.Partition]; o != name {
						s.errs = append(s.errs, fmt.Sprintf("%s read partition %d owned by %q", name, r.Partition, o))
					}
					s.values[string(r.Value)]++
					s.mu.Unlock()
					cl.MarkCommitRecords(r)
				})
			}
		}()
		return cl, done
	}
	c1, done1 := consumer("c1")
	c2, done2 := consumer("c2")
	waitUntil(t, "both consumers to own partitions", 30*time.Second, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		owners := map[string]int{}
		for _, o := range s.owner {
			owners[o]++
		}
		return len(s.owner) == 4 && owners["c1"] > 0 && owners["c2"] > 0
	})
	waitUntil(t, "every record", 30*time.Second, func() bool { return s.count() == 200 })

	// c1 leaves: c2 takes its partitions and reads only what comes next.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c1.CommitMarkedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	c1.Close()
	<-done1
	waitUntil(t, "c2 to own every partition", 30*time.Second, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.owner) == 4 && s.owner[0] == "c2" && s.owner[1] == "c2" && s.owner[2] == "c2" && s.owner[3] == "c2"
	})
	pcl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	produce(t, pcl, topic, 200, 100)
	waitUntil(t, "the records produced after the handover", 30*time.Second, func() bool { return s.count() == 300 })
	if err := c2.CommitMarkedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	for v, n := range s.values {
		if n != 1 {
			s.errs = append(s.errs, fmt.Sprintf("value %s read %d times", v, n))
		}
	}
	errs := s.errs
	s.mu.Unlock()
	for _, e := range errs {
		t.Error(e)
	}

	adm := kadm.NewClient(pcl)
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offs.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != 300 {
		t.Errorf("committed offsets add up to %d, want 300", total)
	}
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if d := described[group]; d.State != "Stable" || len(d.Members) != 1 || d.Protocol != "cooperative-sticky" {
		t.Errorf("describe: state %s, %d members, protocol %s", d.State, len(d.Members), d.Protocol)
	}
	c2.Close()
	<-done2
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l := listed[group]; l.State != "Empty" || l.ProtocolType != "consumer" {
		t.Errorf("list after the last member left: %+v", l)
	}
	// An empty group can be deleted; its offsets go with it.
	if res, err := adm.DeleteGroups(ctx, group); err != nil || res[group].Err != nil {
		t.Fatalf("delete group: %v %v", err, res[group].Err)
	}
	offs, err = adm.FetchOffsets(ctx, group)
	if err != nil || len(offs) != 0 {
		t.Fatalf("offsets after delete: %v %v", offs, err)
	}
}

type saramaHandler struct {
	mu     sync.Mutex
	values map[string]int
	ready  chan struct{}
	once   sync.Once
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error {
	h.once.Do(func() { close(h.ready) })
	return nil
}
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		h.mu.Lock()
		h.values[string(m.Value)]++
		h.mu.Unlock()
		sess.MarkMessage(m, "")
	}
	return nil
}

func (h *saramaHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.values)
}

// TestSaramaConsumerGroup consumes with a sarama group, commits, restarts the group and
// checks that it resumes where it stopped.
func TestSaramaConsumerGroup(t *testing.T) {
	addr, _ := startBroker(t)
	// Sarama picks request versions from the Kafka version it is told to speak.
	for _, version := range []sarama.KafkaVersion{sarama.V1_0_0_0, sarama.V2_3_0_0, sarama.V3_6_0_0} {
		t.Run(version.String(), func(t *testing.T) {
			topic, group := "events-"+version.String(), "sarama-"+version.String()
			createTopic(t, addr, topic, 3, 90)
			run := func(want int) map[string]int {
				cfg := sarama.NewConfig()
				cfg.Version = version
				cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
				cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
				cfg.Consumer.Group.Session.Timeout = 6 * time.Second
				cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
				cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
				if err != nil {
					t.Fatal(err)
				}
				h := &saramaHandler{values: map[string]int{}, ready: make(chan struct{})}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					for ctx.Err() == nil {
						if err := cg.Consume(ctx, []string{topic}, h); err != nil {
							done <- err
							return
						}
					}
					done <- nil
				}()
				waitUntil(t, "sarama to consume", 30*time.Second, func() bool { return h.count() >= want })
				cancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if err := cg.Close(); err != nil {
					t.Fatal(err)
				}
				return h.values
			}
			if first := run(90); len(first) != 90 {
				t.Fatalf("first run read %d values", len(first))
			}
			pcl, err := kgo.NewClient(kgo.SeedBrokers(addr))
			if err != nil {
				t.Fatal(err)
			}
			defer pcl.Close()
			produce(t, pcl, topic, 1000, 30)
			second := run(30)
			var vals []string
			for v := range second {
				vals = append(vals, v)
			}
			sort.Strings(vals)
			for _, v := range vals {
				if n, _ := strconv.Atoi(v); n < 1000 {
					t.Fatalf("the restarted group re-read %s: the commits were not resumed", v)
				}
			}
		})
	}
}

// TestGroupRequestErrors checks error answers at the wire level: unsupported coordinator
// types, a commit for a missing topic, and an oversized member metadata.
func TestGroupRequestErrors(t *testing.T) {
	addr, _ := startBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType = 1
	fc.CoordinatorKeys = []string{"txn"}
	fresp, err := fc.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(fresp.Coordinators) != 1 || fresp.Coordinators[0].ErrorCode != 0 || fresp.Coordinators[0].NodeID != 1 {
		t.Fatalf("transaction coordinator: %+v", fresp.Coordinators)
	}
	fc.CoordinatorType = 2 // a share group's (KIP-932): not served
	if fresp, err = fc.RequestWith(ctx, cl); err != nil || fresp.Coordinators[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("unknown coordinator type: %+v %v", fresp, err)
	}
	fc.CoordinatorType = 0
	fc.CoordinatorKeys = []string{"a", "b"}
	fresp, err = fc.RequestWith(ctx, cl)
	if err != nil || len(fresp.Coordinators) != 2 || fresp.Coordinators[1].ErrorCode != 0 || fresp.Coordinators[1].NodeID != 1 {
		t.Fatalf("group coordinators: %+v %v", fresp, err)
	}

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group = "g"
	ot := kmsg.NewOffsetCommitRequestTopic()
	ot.Topic = "missing"
	op := kmsg.NewOffsetCommitRequestTopicPartition()
	op.Offset = 3
	ot.Partitions = append(ot.Partitions, op)
	oc.Topics = append(oc.Topics, ot)
	oresp, err := oc.RequestWith(ctx, cl)
	if err != nil || oresp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("commit to a missing topic: %+v %v", oresp, err)
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = "g"
	ofresp, err := of.RequestWith(ctx, cl)
	if err != nil || ofresp.ErrorCode != 0 || len(ofresp.Topics) != 0 {
		t.Fatalf("nothing is stored: %+v %v", ofresp, err)
	}

	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = "big", "consumer", 10000, 10000
	jp := kmsg.NewJoinGroupRequestProtocol()
	jp.Name, jp.Metadata = "range", make([]byte, 2<<20)
	jg.Protocols = append(jg.Protocols, jp)
	jresp, err := jg.RequestWith(ctx, cl)
	if err != nil || jresp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("oversized metadata: %+v %v", jresp, err)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lresp, err := lg.RequestWith(ctx, cl)
	if err != nil || len(lresp.Groups) != 1 || lresp.Groups[0].Group != "g" {
		t.Fatalf("groups after the refused join: %+v %v", lresp, err)
	}

	// The internal topic refuses produce, delete and new partitions.
	pr := cl.ProduceSync(ctx, &kgo.Record{Topic: "__consumer_offsets", Value: []byte("x")})
	if err := pr.FirstErr(); err == nil {
		t.Fatal("produce to __consumer_offsets succeeded")
	}
	adm := kadm.NewClient(cl)
	if res, err := adm.DeleteTopics(ctx, "__consumer_offsets"); err == nil && res["__consumer_offsets"].Err == nil {
		t.Fatal("deleting __consumer_offsets succeeded")
	}
}
