package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// End-to-end tests of min.insync.racks on produce (DESIGN.md §3): what a producer is told,
// what is stored and what /metrics and the admin API show while a rack is down, paused or
// back, on brokers started with --rack. Brokers run with a 2 s replica.lag.time.max.ms
// where a test waits for a stopped broker to leave the ISR.

// createOnReplicas creates a one-partition topic with the replicas given, in that order
// (the first is the partition's preferred leader), and the configs given.
func createOnReplicas(t *testing.T, cl *kgo.Client, topic string, replicas []int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Replicas = replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxFor(t, 40*time.Second), cl)
	if err != nil {
		t.Fatalf("CreateTopics %s on %v: %v", topic, replicas, err)
	}
	if r := resp.Topics[0]; r.ErrorCode != 0 {
		t.Fatalf("CreateTopics %s on %v %v: %s %v", topic, replicas, configs, kerrName(r.ErrorCode), deref(r.ErrorMessage))
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// setTopicConfig changes one property of a topic with IncrementalAlterConfigs, failing the
// test unless the broker accepts it.
func setTopicConfig(t *testing.T, adm *kadm.Client, topic, name, value string) {
	t.Helper()
	resps, err := adm.AlterTopicConfigs(ctxFor(t, 15*time.Second), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: kadm.StringPtr(value)}}, topic)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs %s %s=%s: %v", topic, name, value, err)
	}
	if r, _ := resps.On(topic, nil); r.Err != nil {
		t.Fatalf("IncrementalAlterConfigs %s %s=%s: %v %s", topic, name, value, r.Err, r.ErrMessage)
	}
}

// waitISR waits until b leads topic's partition 0 with an ISR of n replicas, and returns
// its admin view then.
func waitISR(t *testing.T, b *Broker, topic string, n int) PartitionStatus {
	t.Helper()
	var st PartitionStatus
	waitFor(t, 45*time.Second, func() bool {
		var ok bool
		st, ok = adminPartition(b, topic, 0)
		return ok && st.IsLeader && len(st.ISR) == n
	})
	return st
}

// produceAcksAll sends one acks=all batch to b for topic's partition 0 on a raw connection
// and returns the answer's code and message.
func produceAcksAll(t *testing.T, b *Broker, topic, value string) (int16, string) {
	t.Helper()
	p := rawProduce(t, b, -1, topic, 0, simpleBatch(value, 1))
	return p.ErrorCode, deref(p.ErrorMessage)
}

// wantAcked fails the test unless an acks=all produce of topic through b succeeds.
func wantAcked(t *testing.T, b *Broker, topic, what string) {
	t.Helper()
	if code, msg := produceAcksAll(t, b, topic, topic); code != 0 {
		t.Fatalf("%s: acks=all produce to %s answered %s %q, want success", what, topic, kerrName(code), msg)
	}
}

// rackGauge reads b's per-partition cairn_partition_{under,at}_min_rack_isr for topic's
// partition 0 (-1 when absent: b does not lead it).
func rackGauge(t *testing.T, b *Broker, name, topic string) float64 {
	t.Helper()
	v, ok := b.Metric(t, "cairn_partition_"+name+"_min_rack_isr", fmt.Sprintf(`{partition="0",topic=%q}`, topic))
	if !ok {
		return -1
	}
	return v
}

// brokerCount reads b's per-broker cairn_{under,at}_min_rack_isr_partition_count.
func brokerCount(t *testing.T, b *Broker, name string) float64 {
	t.Helper()
	v, ok := b.Metric(t, "cairn_"+name+"_min_rack_isr_partition_count", "")
	if !ok {
		t.Fatalf("broker %d exports no cairn_%s_min_rack_isr_partition_count", b.opts.NodeID, name)
	}
	return v
}

// TestRackOutage: three brokers in racks r1, r2 and r3, one replica of each topic in each.
// While all are in sync, acks=all succeeds on min.insync.racks=3, and the ISR spans the
// three racks. A rack shut down makes acks=all on that topic fail with NOT_ENOUGH_REPLICAS
// and a NOT_ENOUGH_RACKS: message, storing nothing, and the metrics show it; the two rules
// fail apart, each with its own message; a topic at the defaults is unaffected. Lowering
// min.insync.racks to 1 during the outage lets produces through without a restart; once
// the rack is back the ISR spans it again and min.insync.racks=3 is met again.
func TestRackOutage(t *testing.T) {
	t.Parallel()
	bs := startClusterInRacks(t, []string{"r1", "r2", "r3"}, "--replica-lag-time-max-ms", "2000")
	cl := clusterClient(t, bs)
	adm := kadm.NewClient(cl)
	const racks3, replicas3, plain = "racks3", "replicas3", "plain"
	// Broker 1 is every partition's preferred leader; the broker to go down is one that
	// leads neither racks3 nor replicas3, whoever won their elections.
	createOnReplicas(t, cl, racks3, []int32{1, 2, 3}, map[string]string{"min.insync.racks": "3", "min.insync.replicas": "2"})
	createOnReplicas(t, cl, replicas3, []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "3", "min.insync.racks": "2"})
	createOnReplicas(t, cl, plain, []int32{1, 2, 3}, nil)
	topics := []string{racks3, replicas3, plain}
	// Leadership is Raft's to settle, so each step asks who leads now among the brokers up.
	up := bs
	leader := map[string]*Broker{}
	lead := func(topic string) *Broker { return up[leaderOf(t, up, topic, 0)] }
	for _, topic := range topics {
		leader[topic] = lead(topic)
	}
	victim := -1 // with two leaders among three brokers, there is one
	for i, b := range bs {
		if b != leader[racks3] && b != leader[replicas3] {
			victim = i
		}
	}
	// 1. All in sync: acks=all succeeds, and the ISR spans the three racks.
	for _, topic := range topics {
		st := waitISR(t, leader[topic], topic, 3)
		if !slices.Equal(st.ISRRacks, []string{"r1", "r2", "r3"}) {
			t.Errorf("%s: admin API isr_racks %v, want [r1 r2 r3]", topic, st.ISRRacks)
		}
		wantAcked(t, leader[topic], topic, "all racks in sync")
	}
	if st := leader[racks3].Partition(t, racks3, 0); st.MinInsyncRacks != 3 || st.MinInsyncReplicas != 2 {
		t.Errorf("%s: admin API min_insync_racks=%d min_insync_replicas=%d, want 3 and 2", racks3, st.MinInsyncRacks, st.MinInsyncReplicas)
	}
	for topic, want := range map[string][2]float64{racks3: {0, 1}, replicas3: {0, 0}, plain: {0, 0}} {
		if u, a := rackGauge(t, leader[topic], "under", topic), rackGauge(t, leader[topic], "at", topic); u != want[0] || a != want[1] {
			t.Errorf("%s in sync: under_min_rack_isr=%v at_min_rack_isr=%v, want %v and %v", topic, u, a, want[0], want[1])
		}
	}

	// 2. Rack r<victim> shuts down. Once the ISR drops it, acks=all on racks3 is refused
	// before anything is appended, and /metrics says so.
	before := map[string]int64{}
	for _, topic := range topics {
		before[topic] = leader[topic].Partition(t, topic, 0).LogEnd
	}
	down := fmt.Sprintf("r%d", victim+1)
	bs[victim].Stop()
	up = append(slices.Clone(bs[:victim]), bs[victim+1:]...)
	for _, topic := range topics {
		leader[topic] = lead(topic) // plain's may have moved off the stopped broker
	}
	waitFor(t, 45*time.Second, func() bool { return rackGauge(t, leader[racks3], "under", racks3) == 1 })
	for _, topic := range topics {
		waitISR(t, leader[topic], topic, 2)
	}
	code, msg := produceAcksAll(t, leader[racks3], racks3, "refused")
	if code != kerr.NotEnoughReplicas.Code || !strings.HasPrefix(msg, "NOT_ENOUGH_RACKS: ") || !strings.Contains(msg, "min.insync.racks needs 3") {
		t.Errorf("%s with %s down: %s %q, want NOT_ENOUGH_REPLICAS with a message starting NOT_ENOUGH_RACKS: and saying min.insync.racks needs 3",
			racks3, down, kerrName(code), msg)
	}
	if strings.Contains(msg, down) {
		t.Errorf("%s: the refusal names %s as in sync: %q", racks3, down, msg)
	}
	if st := leader[racks3].Partition(t, racks3, 0); st.LogEnd != before[racks3] || len(st.ISRRacks) != 2 {
		t.Errorf("%s after the refusal: log end %d (was %d), isr_racks %v; want nothing appended and two racks", racks3, st.LogEnd, before[racks3], st.ISRRacks)
	}
	if a := rackGauge(t, leader[racks3], "at", racks3); a != 0 {
		t.Errorf("%s under min racks: at_min_rack_isr=%v, want 0", racks3, a)
	}
	if n := brokerCount(t, leader[racks3], "under"); n < 1 {
		t.Errorf("broker %d leads %s under min racks, but cairn_under_min_rack_isr_partition_count=%v", leader[racks3].opts.NodeID, racks3, n)
	}

	// 4. Each rule fails on its own, with its own message. replicas3: two in-sync replicas
	// in two racks meet min.insync.racks=2 but not min.insync.replicas=3. racks3: two
	// in-sync replicas meet min.insync.replicas=2 but not min.insync.racks=3 (above).
	code, msg = produceAcksAll(t, leader[replicas3], replicas3, "refused")
	if code != kerr.NotEnoughReplicas.Code || !strings.Contains(msg, "min.insync.replicas needs 3") || strings.Contains(msg, "NOT_ENOUGH_RACKS") {
		t.Errorf("%s with %s down: %s %q, want NOT_ENOUGH_REPLICAS saying min.insync.replicas needs 3, not NOT_ENOUGH_RACKS", replicas3, down, kerrName(code), msg)
	}
	if st := leader[replicas3].Partition(t, replicas3, 0); st.LogEnd != before[replicas3] {
		t.Errorf("%s after the refusal: log end %d, was %d", replicas3, st.LogEnd, before[replicas3])
	}
	if u, a := rackGauge(t, leader[replicas3], "under", replicas3), rackGauge(t, leader[replicas3], "at", replicas3); u != 0 || a != 1 {
		t.Errorf("%s: two racks in sync against min.insync.racks=2: under=%v at=%v, want 0 and 1", replicas3, u, a)
	}

	// 6. At the defaults (min.insync.racks=1) a rack down changes nothing.
	wantAcked(t, leader[plain], plain, "defaults, one rack down")
	if u, a := rackGauge(t, leader[plain], "under", plain), rackGauge(t, leader[plain], "at", plain); u != 0 || a != 0 {
		t.Errorf("%s at the defaults: under=%v at=%v, want 0 and 0", plain, u, a)
	}

	// 3. During the outage, min.insync.racks=1 at run time lets the next produce through.
	setTopicConfig(t, adm, racks3, "min.insync.racks", "1")
	waitFor(t, 30*time.Second, func() bool {
		code, _ := produceAcksAll(t, leader[racks3], racks3, "after-lowering")
		return code == 0
	})
	if u := rackGauge(t, leader[racks3], "under", racks3); u != 0 {
		t.Errorf("%s at min.insync.racks=1: under_min_rack_isr=%v, want 0", racks3, u)
	}

	// 5. The rack comes back: the ISR spans it again, and min.insync.racks=3 is met again.
	bs[victim].Restart()
	up = bs
	leader[racks3] = lead(racks3)
	st := waitISR(t, leader[racks3], racks3, 3)
	if !slices.Equal(st.ISRRacks, []string{"r1", "r2", "r3"}) {
		t.Errorf("%s after %s came back: isr_racks %v, want [r1 r2 r3]", racks3, down, st.ISRRacks)
	}
	setTopicConfig(t, adm, racks3, "min.insync.racks", "3")
	waitFor(t, 30*time.Second, func() bool { return leader[racks3].Partition(t, racks3, 0).MinInsyncRacks == 3 })
	wantAcked(t, leader[racks3], racks3, "rack back, min.insync.racks=3 again")
	if u, a := rackGauge(t, leader[racks3], "under", racks3), rackGauge(t, leader[racks3], "at", racks3); u != 0 || a != 1 {
		t.Errorf("%s recovered: under=%v at=%v, want 0 and 1", racks3, u, a)
	}
	if n := brokerCount(t, leader[racks3], "under"); n != 0 {
		t.Errorf("after recovery broker %d has cairn_under_min_rack_isr_partition_count=%v, want 0", leader[racks3].opts.NodeID, n)
	}
	// Everything acknowledged is there, and nothing refused is: one record per success.
	if end := leader[racks3].Partition(t, racks3, 0).LogEnd; end != before[racks3]+2 {
		t.Errorf("%s: log end %d, want %d (two acknowledged since the outage began)", racks3, end, before[racks3]+2)
	}
}

// TestRackAckWaitsForThirdRack: five brokers over racks r1, r1, r2, r2 and r3, RF=5,
// min.insync.racks=3. With r3's broker paused, an acks=all batch is committed by the four
// brokers in r1 and r2 (a majority), but it is not acknowledged until r3 holds it too: the
// answer comes after the broker resumes. The control topic at min.insync.racks=1 is
// acknowledged while r3 is paused.
func TestRackAckWaitsForThirdRack(t *testing.T) {
	t.Parallel()
	bs := startClusterInRacks(t, []string{"r1", "r1", "r2", "r2", "r3"})
	cl := clusterClient(t, bs)
	const wait3, wait1 = "wait3", "wait1"
	all := []int32{1, 2, 3, 4, 5}
	createOnReplicas(t, cl, wait3, all, map[string]string{"min.insync.racks": "3"})
	createOnReplicas(t, cl, wait1, all, nil)
	r3 := bs[4]
	lead := map[string]*Broker{}
	for _, topic := range []string{wait3, wait1} {
		lead[topic] = bs[leaderOf(t, bs, topic, 0)]
		if lead[topic] == r3 { // a restart hands its leaderships to the others first
			r3.Restart()
			lead[topic] = bs[leaderOf(t, bs[:4], topic, 0)]
		}
	}
	for _, topic := range []string{wait3, wait1} {
		waitISR(t, lead[topic], topic, 5)
		wantAcked(t, lead[topic], topic, "all in sync")
	}
	committedBefore := lead[wait3].Partition(t, wait3, 0).Committed

	if err := r3.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r3.Resume() })
	rc := dialRaw(t, lead[wait3].KafkaAddr)
	req := produceRequest(produceVersion, -1, wait3, 0, simpleBatch("third-rack", 1))
	req.TimeoutMillis = 60000
	type answer struct {
		p   kmsg.ProduceResponseTopicPartition
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := rc.roundTrip(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		p, err := producePartitionResponse(resp)
		answered <- answer{p, err}
	}()
	// The four brokers in r1 and r2 commit the batch; it waits for r3 all the same. The
	// control produce after the commit gives a wrong early answer time to arrive.
	waitFor(t, 30*time.Second, func() bool { return lead[wait3].Partition(t, wait3, 0).Committed > committedBefore })
	wantAcked(t, lead[wait1], wait1, "min.insync.racks=1, r3 paused")
	select {
	case a := <-answered:
		t.Fatalf("%s answered (%v) %s %q while r3 was paused and held no copy, want no answer yet", wait3, a.err, kerrName(a.p.ErrorCode), deref(a.p.ErrorMessage))
	default:
	}
	if st := lead[wait3].Partition(t, wait3, 0); len(st.ISRRacks) != 3 {
		t.Errorf("%s with r3 paused (within the lag window): isr_racks %v, want three racks", wait3, st.ISRRacks)
	}

	if err := r3.Resume(); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-answered:
		if a.err != nil || a.p.ErrorCode != 0 || a.p.BaseOffset != committedBefore {
			t.Errorf("%s after r3 resumed: (%v) %s %q at offset %d, want success at %d", wait3, a.err, kerrName(a.p.ErrorCode), deref(a.p.ErrorMessage), a.p.BaseOffset, committedBefore)
		}
	case <-time.After(45 * time.Second):
		t.Fatalf("%s: no answer within 45 s of r3 resuming", wait3)
	}
}
