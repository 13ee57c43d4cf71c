package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/test/harness"
)

// Multi-process tests: real cairn processes forming a cluster on loopback.

// startCluster starts n founding brokers (ids 1..n, one rack each) with the same seeds,
// all at once: a founder is ready only once every seed answers.
func startCluster(t *testing.T, n int, args ...string) []*Broker {
	t.Helper()
	racks := make([]string, n)
	for i := range racks {
		racks[i] = fmt.Sprintf("rack-%d", i+1)
	}
	return startClusterInRacks(t, racks, args...)
}

// startClusterInRacks starts founding brokers as startCluster does, broker i+1 in
// racks[i]; "" declares no rack.
func startClusterInRacks(t *testing.T, racks []string, args ...string) []*Broker {
	t.Helper()
	n := len(racks)
	addrs := make([][3]string, n)
	var seeds []string
	for i := range addrs {
		addrs[i] = [3]string{freeAddr(t), freeAddr(t), freeAddr(t)}
		seeds = append(seeds, addrs[i][2])
	}
	bs := make([]*Broker, n)
	for i := range bs {
		own := []string{"--seeds", strings.Join(seeds, ",")}
		if racks[i] != "" {
			own = append(own, "--rack", racks[i])
		}
		bs[i] = newBroker(t, BrokerOpts{NodeID: i + 1, Addrs: &addrs[i], Args: append(own, args...)})
		bs[i].KafkaAddr, bs[i].AdminAddr, bs[i].RPCAddr = addrs[i][0], addrs[i][1], addrs[i][2]
	}
	for _, b := range bs {
		t.Cleanup(b.cleanupStop) // a broker that never started has nothing to stop
	}
	launchTogether(t, bs)
	waitListed(t, bs)
	return bs
}

// launchTogether starts the brokers at once (see harness.LaunchAll) and fails the test if
// one does not become ready.
func launchTogether(t *testing.T, bs []*Broker) {
	t.Helper()
	for i, err := range harness.LaunchAll(context.Background(), common(bs)...) {
		if err != nil {
			t.Fatalf("starting broker %d: %v\nlog tail:\n%s", bs[i].opts.NodeID, err, harness.TailFile(bs[i].LogPath, 60))
		}
	}
}

// waitListed waits until every broker runs and lists all of them; one that is down fails
// the test (see harness.WaitListed). A broker is ready once its own registration is
// applied; tests start from every broker listing every other (placement counts the live
// brokers it knows).
func waitListed(t *testing.T, bs []*Broker) {
	t.Helper()
	for _, b := range bs {
		if err := harness.WaitListed(ctxFor(t, 30*time.Second), len(bs), b.Broker); err != nil {
			t.Fatal(err)
		}
	}
}

// common returns the harness's brokers behind bs.
func common(bs []*Broker) []*harness.Broker {
	out := make([]*harness.Broker, len(bs))
	for i, b := range bs {
		out[i] = b.Broker
	}
	return out
}

// clusterClient is a franz-go client seeded with every broker of the cluster.
func clusterClient(t testing.TB, bs []*Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	var seeds []string
	for _, b := range bs {
		seeds = append(seeds, b.KafkaAddr)
	}
	base := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(100 * time.Millisecond), kgo.RetryTimeout(60 * time.Second), kgo.ClientID("cairn-e2e")}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createReplicatedTopic(t testing.TB, adm *kadm.Client, name string, partitions int32, rf int16) {
	t.Helper()
	resp, err := adm.CreateTopic(ctxFor(t, 30*time.Second), partitions, rf, nil, name)
	if err != nil || resp.Err != nil {
		t.Fatalf("CreateTopics %s (rf %d): %v %v", name, rf, err, resp.Err)
	}
}

// allInSync reports whether every partition of topic has a leader among bs that reports
// an ISR of n replicas.
func allInSync(bs []*Broker, topic string, parts int32, n int) bool {
	for p := int32(0); p < parts; p++ {
		ok := false
		for _, b := range bs {
			if st, found := adminPartition(b, topic, p); found && st.IsLeader && len(st.ISR) == n {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// adminPartition reads a broker's admin view of one partition (ok=false: no replica
// there, or no answer within 5 s).
func adminPartition(b *Broker, topic string, p int32) (PartitionStatus, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := b.PartitionStatus(ctx, topic, p)
	return st, err == nil
}

// leaderOf waits until some broker reports leading the partition and returns its index.
func leaderOf(t testing.TB, bs []*Broker, topic string, p int32) int {
	t.Helper()
	idx := -1
	var seen []string // each broker's last view, logged if no leader turns up
	defer func() {
		if idx < 0 {
			t.Logf("%s/%d as each broker last saw it: %s", topic, p, strings.Join(seen, "; "))
		}
	}()
	waitFor(t, 30*time.Second, func() bool {
		seen = seen[:0]
		for i, b := range bs {
			st, ok := adminPartition(b, topic, p)
			if ok && st.IsLeader {
				idx = i
				return true
			}
			seen = append(seen, fmt.Sprintf("broker %d: replica %v %+v", i+1, ok, st))
		}
		return false
	})
	return idx
}

// producing runs an idempotent acks=all producer over the cluster, as fast as 100 buffered
// records allow, until stop is called (also at the test's end): values "v-<i>", keyed
// "k<i%17>" when keyed. Every outcome goes to the returned log.
func producing(t *testing.T, bs []*Broker, topic string, keyed bool) (prod *kgo.Client, log *ackLog, stop func()) {
	prod = clusterClient(t, bs, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(60*time.Second), kgo.MaxBufferedRecords(100))
	log = &ackLog{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			r := &kgo.Record{Value: []byte(fmt.Sprintf("v-%07d", i))}
			if keyed {
				r.Key = []byte(fmt.Sprintf("k%d", i%17))
			}
			prod.Produce(context.Background(), r, log.callback)
		}
	}()
	stop = sync.OnceFunc(func() { close(done); wg.Wait() })
	t.Cleanup(func() { prod.Close(); stop() })
	return prod, log, stop
}

// TestClusterMetadataAndReplication: three founders form one cluster; every broker lists
// every broker and each partition's replicas and ISR (kcat -L); records produced through
// one broker are read through another; every replica ends with the same log.
func TestClusterMetadataAndReplication(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	bs := startCluster(t, 3)
	createReplicatedTopic(t, bs[0].Admin(t), "repl", 3, 3)

	for _, b := range bs {
		waitFor(t, 30*time.Second, func() bool {
			r := run(t, 30*time.Second, "", kcat, "-L", "-b", b.KafkaAddr, "-t", "repl")
			if r.Err != nil || !strings.Contains(r.Stdout, "3 brokers:") {
				return false
			}
			for _, o := range bs {
				if !strings.Contains(r.Stdout, fmt.Sprintf("broker %d at %s", o.opts.NodeID, o.KafkaAddr)) {
					return false
				}
			}
			// Every partition: three replicas, all in sync.
			n := 0
			for _, line := range strings.Split(r.Stdout, "\n") {
				if !strings.Contains(line, "partition ") || !strings.Contains(line, "replicas: ") {
					continue
				}
				reps := line[strings.Index(line, "replicas: ")+len("replicas: "):]
				reps, isrs, _ := strings.Cut(reps, ", isrs: ")
				if len(strings.Split(reps, ",")) == 3 && len(strings.Split(strings.TrimSpace(isrs), ",")) == 3 {
					n++
				}
			}
			return n == 3
		})
	}

	prod := clusterClient(t, bs[1:2], kgo.DefaultProduceTopic("repl"), kgo.RequiredAcks(kgo.AllISRAcks()))
	acked := produceSync(t, prod, "repl", "r", 300)
	got := consumeAll(t, bs[2], "repl", 3, 300)
	checkAckedReadable(t, acked, got)

	// Followers catch up: every replica's log end equals the leader's.
	for p := int32(0); p < 3; p++ {
		waitFor(t, 30*time.Second, func() bool {
			var ends []int64
			for _, b := range bs {
				st, ok := adminPartition(b, "repl", p)
				if !ok {
					return false
				}
				ends = append(ends, st.LogEnd)
			}
			return ends[0] == ends[1] && ends[1] == ends[2] && ends[0] > 0
		})
	}

	// The inter-broker transport is visible per peer: replication went over it, every
	// outbound connection is open, and this light load never met a full queue.
	for _, b := range bs {
		for _, o := range bs {
			if o == b {
				continue
			}
			peer := fmt.Sprintf(`{peer="%d"}`, o.opts.NodeID)
			if v, ok := b.Metric(t, "cairn_rpc_bytes_sent_total", peer); !ok || v <= 0 {
				t.Errorf("broker %d: cairn_rpc_bytes_sent_total%s = %v (present %v), want > 0", b.opts.NodeID, peer, v, ok)
			}
			if v, ok := b.Metric(t, "cairn_rpc_peer_connected", peer); !ok || v != 1 {
				t.Errorf("broker %d: cairn_rpc_peer_connected%s = %v (present %v), want 1", b.opts.NodeID, peer, v, ok)
			}
			if v, ok := b.Metric(t, "cairn_rpc_send_backpressure_total", peer); !ok || v != 0 {
				t.Errorf("broker %d: cairn_rpc_send_backpressure_total%s = %v (present %v), want 0", b.opts.NodeID, peer, v, ok)
			}
		}
	}
	// The raft host's election counters: the controller group and the partition each
	// elected a leader somewhere, and no election won without a campaign.
	var won, campaigns float64
	for _, b := range bs {
		w, okW := b.Metric(t, "cairn_raft_elections_won_total", "")
		c, okC := b.Metric(t, "cairn_raft_campaigns_total", "")
		if !okW || !okC {
			t.Fatalf("broker %d exports no cairn_raft_elections_won_total or cairn_raft_campaigns_total", b.opts.NodeID)
		}
		won, campaigns = won+w, campaigns+c
	}
	if won < 2 || campaigns < won {
		t.Errorf("cluster-wide cairn_raft_elections_won_total %v and cairn_raft_campaigns_total %v, want at least 2 wins (controller and partition) and no more wins than campaigns", won, campaigns)
	}
}

// TestClusterLeaderKill9UnderLoad: 3 brokers, RF=3, an idempotent producer at acks=-1;
// the partition's leader is killed with kill -9. Every acknowledged record is read back at
// its acknowledged offset with no duplicates, and the killed broker, restarted, catches up.
func TestClusterLeaderKill9UnderLoad(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3)
	const topic = "failover"
	createReplicatedTopic(t, bs[0].Admin(t), topic, 1, 3)

	prod, log, stopLoop := producing(t, bs, topic, false)

	waitFor(t, 60*time.Second, func() bool { return log.count() >= 500 })
	victim := leaderOf(t, bs, topic, 0)
	before := log.count()
	killedAt := time.Now()
	bs[victim].Kill9()
	// At most 100 records were in flight at the kill (MaxBufferedRecords): an
	// acknowledgement beyond those came through the new leader.
	waitFor(t, 60*time.Second, func() bool { return log.count() > before+100 })
	t.Logf("leader (broker %d) killed with %d records acknowledged; the first acknowledgement through the new leader came within %v",
		victim+1, before, time.Since(killedAt).Round(time.Millisecond))
	target := log.count() + 500
	waitFor(t, 60*time.Second, func() bool { return log.count() >= target })
	bs[victim].Restart()
	target = log.count() + 300
	waitFor(t, 60*time.Second, func() bool { return log.count() >= target })
	stopLoop()
	if err := prod.Flush(ctxFor(t, 60*time.Second)); err != nil {
		t.Fatalf("producer flush: %v", err)
	}
	acked, failed := log.snapshot()
	t.Logf("%d acknowledged, %d failed", len(acked), len(failed))
	if len(failed) > 0 {
		t.Errorf("%d records failed; the first: %v", len(failed), failed[0])
	}

	var end int64
	for _, a := range acked {
		end = max(end, a.Offset+1)
	}
	got := consumeAll(t, bs[(victim+1)%3], topic, 1, int(end))
	checkAckedReadable(t, acked, got)
	seen := map[string]int64{}
	for _, r := range got {
		if prev, dup := seen[string(r.Value)]; dup {
			t.Errorf("%q stored twice, at offsets %d and %d (idempotent producer)", r.Value, prev, r.Offset)
		}
		seen[string(r.Value)] = r.Offset
	}
	// The restarted broker catches up with the leader.
	waitFor(t, 60*time.Second, func() bool {
		st, ok := adminPartition(bs[victim], topic, 0)
		if !ok {
			return false
		}
		lead, lok := adminPartition(bs[leaderOf(t, bs, topic, 0)], topic, 0)
		return lok && st.LogEnd == lead.LogEnd && st.LogEnd >= end
	})
}

// TestClusterProduceForwarded: a produce sent to a broker that does not lead the partition
// (a follower, and a broker with no replica) is forwarded to the leader for every acks
// value, and every record is stored.
func TestClusterProduceForwarded(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3)
	const topic = "fwd"
	createReplicatedTopic(t, bs[0].Admin(t), topic, 1, 2)
	leader := leaderOf(t, bs, topic, 0)

	cl := clusterClient(t, bs)
	n := 0
	for i, b := range bs {
		if i == leader {
			continue
		}
		_, hasReplica := adminPartition(b, topic, 0)
		for _, acks := range []int16{-1, 1, 0} {
			n++
			batch := kafkatest.Batch{Values: [][]byte{[]byte(fmt.Sprintf("fwd-%d", n))}, Timestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}.Bytes()
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis = acks, 10000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = batch
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := cl.Broker(int(b.opts.NodeID)).Request(ctxFor(t, 20*time.Second), req)
			if err != nil {
				t.Fatalf("produce acks=%d to broker %d: %v", acks, b.opts.NodeID, err)
			}
			if acks == 0 {
				continue // no response by design
			}
			pr := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if pr.ErrorCode != 0 {
				t.Fatalf("produce acks=%d to broker %d (replica here: %v): %v", acks, b.opts.NodeID, hasReplica, kerr.ErrorForCode(pr.ErrorCode))
			}
		}
	}
	// Reads are never forwarded: a follower, or a broker without a replica, answers
	// NOT_LEADER_OR_FOLLOWER to Fetch, ListOffsets and OffsetForLeaderEpoch.
	for i, b := range bs {
		if i == leader {
			continue
		}
		br := cl.Broker(int(b.opts.NodeID))
		fetch := kmsg.NewPtrFetchRequest()
		fetch.Version, fetch.MaxWaitMillis, fetch.MaxBytes = 12, 100, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LastFetchedEpoch = 1<<20, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
		fetch.Topics = append(fetch.Topics, ft)
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.ReplicaID = -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = topic
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp, lp.CurrentLeaderEpoch = -1, -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		oe := kmsg.NewPtrOffsetForLeaderEpochRequest()
		oe.ReplicaID = -1
		ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
		ot.Topic = topic
		op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		op.CurrentLeaderEpoch, op.LeaderEpoch = -1, 1
		ot.Partitions = append(ot.Partitions, op)
		oe.Topics = append(oe.Topics, ot)
		for _, req := range []kmsg.Request{fetch, lo, oe} {
			resp, err := br.Request(ctxFor(t, 10*time.Second), req)
			if err != nil {
				t.Fatalf("%s to broker %d: %v", kmsg.NameForKey(req.Key()), b.opts.NodeID, err)
			}
			var code int16
			switch r := resp.(type) {
			case *kmsg.FetchResponse:
				code = r.Topics[0].Partitions[0].ErrorCode
			case *kmsg.ListOffsetsResponse:
				code = r.Topics[0].Partitions[0].ErrorCode
			case *kmsg.OffsetForLeaderEpochResponse:
				code = r.Topics[0].Partitions[0].ErrorCode
			}
			if code != kerr.NotLeaderForPartition.Code {
				t.Errorf("%s to broker %d (not the leader): error %v, want NOT_LEADER_OR_FOLLOWER", kmsg.NameForKey(req.Key()), b.opts.NodeID, kerr.ErrorForCode(code))
			}
		}
	}

	got := consumeAll(t, bs[leader], topic, 1, n)
	values := map[string]bool{}
	for _, r := range got {
		values[string(r.Value)] = true
	}
	for i := 1; i <= n; i++ {
		if !values[fmt.Sprintf("fwd-%d", i)] {
			t.Errorf("forwarded record fwd-%d was not stored", i)
		}
	}
}

// TestClusterFourthBrokerJoins: a broker started with --seeds pointing at a running
// cluster joins it, sees the existing topics, and takes replicas of new ones.
func TestClusterFourthBrokerJoins(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	bs := startCluster(t, 3)
	createReplicatedTopic(t, bs[0].Admin(t), "before", 2, 3)
	acked := produceSync(t, clusterClient(t, bs, kgo.DefaultProduceTopic("before")), "before", "b", 50)

	var seeds []string
	for _, b := range bs {
		seeds = append(seeds, b.RPCAddr)
	}
	b4 := startBroker(t, BrokerOpts{NodeID: 4, Args: []string{"--seeds", strings.Join(seeds, ","), "--rack", "rack-4"}})
	all := append(bs, b4)
	waitFor(t, 30*time.Second, func() bool {
		r := run(t, 30*time.Second, "", kcat, "-L", "-b", b4.KafkaAddr)
		return r.Err == nil && strings.Contains(r.Stdout, "4 brokers:") && strings.Contains(r.Stdout, fmt.Sprintf("broker 4 at %s", b4.KafkaAddr)) &&
			strings.Contains(r.Stdout, `topic "before" with 2 partitions`) && !strings.Contains(r.Stdout, "leader -1")
	})
	// The existing data is readable through the new broker.
	checkAckedReadable(t, acked, consumeAll(t, b4, "before", 2, 50))

	// New topics are placed over all four brokers.
	createReplicatedTopic(t, b4.Admin(t), "after", 8, 3)
	md, err := b4.Admin(t).Metadata(ctxFor(t, 10*time.Second), "after")
	if err != nil {
		t.Fatal(err)
	}
	holds4 := false
	for _, p := range md.Topics["after"].Partitions {
		if len(p.Replicas) != 3 {
			t.Errorf("partition %d has replicas %v, want 3", p.Partition, p.Replicas)
		}
		for _, r := range p.Replicas {
			holds4 = holds4 || r == 4
		}
	}
	if !holds4 {
		t.Errorf("no partition of a topic created after the join has a replica on broker 4: %+v", md.Topics["after"].Partitions)
	}
	acked = produceSync(t, clusterClient(t, all, kgo.DefaultProduceTopic("after")), "after", "a", 200)
	checkAckedReadable(t, acked, consumeAll(t, b4, "after", 8, 200))
}

// TestClusterRollingRestart: every broker in turn is stopped with SIGTERM (it hands its
// leaderships off first) and started again, under an idempotent acks=-1 producer with
// retries. The producer sees no error, and every acknowledged record is read back.
func TestClusterRollingRestart(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3)
	const topic, parts = "rolling", 3
	createReplicatedTopic(t, bs[0].Admin(t), topic, parts, 3)

	prod, log, stopLoop := producing(t, bs, topic, true)

	// inSync: every partition's leader reports all three replicas in sync.
	inSync := func() bool { return allInSync(bs, topic, parts, 3) }
	for _, b := range bs {
		target := log.count() + 300
		waitFor(t, 60*time.Second, func() bool { return log.count() >= target })
		b.Restart()
		waitFor(t, 60*time.Second, inSync)
	}
	target := log.count() + 300
	waitFor(t, 60*time.Second, func() bool { return log.count() >= target })
	stopLoop()
	if err := prod.Flush(ctxFor(t, 60*time.Second)); err != nil {
		t.Fatalf("producer flush: %v", err)
	}
	acked, failed := log.snapshot()
	t.Logf("%d acknowledged, %d failed across the rolling restart", len(acked), len(failed))
	if len(failed) > 0 {
		t.Errorf("%d records failed during a rolling restart; the first: %v", len(failed), failed[0])
	}
	checkAckOrder(t, acked, len(failed) == 0)
	ends := endOffsets(t, bs[0].Admin(t), topic)
	var total int64
	for _, e := range ends {
		total += e
	}
	checkAckedReadable(t, acked, consumeAll(t, bs[1], topic, parts, int(total)))
	handedOff := false
	for _, b := range bs {
		handedOff = handedOff || b.LogContains("handed leadership off before stopping")
	}
	if !handedOff {
		t.Error("no broker logged handing its leaderships off on SIGTERM")
	}
}

// TestClusterDeleteRecordsSurvivesFailover: DeleteRecords on the leader reaches every
// replica, so the deleted records do not come back when another replica takes over.
func TestClusterDeleteRecordsSurvivesFailover(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3)
	const topic = "trim"
	createReplicatedTopic(t, bs[0].Admin(t), topic, 1, 3)
	produceSync(t, clusterClient(t, bs, kgo.DefaultProduceTopic(topic)), topic, "d", 100)
	adm := kadm.NewClient(clusterClient(t, bs))
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 60})
	resp, err := adm.DeleteRecords(ctxFor(t, 20*time.Second), offs)
	if err != nil || resp.Error() != nil {
		t.Fatalf("DeleteRecords: %v %v", err, resp.Error())
	}
	waitFor(t, 30*time.Second, func() bool {
		for _, b := range bs {
			if st, ok := adminPartition(b, topic, 0); !ok || st.LogStart != 60 {
				return false
			}
		}
		return true
	})
	victim := leaderOf(t, bs, topic, 0)
	bs[victim].Kill9()
	var rest []*Broker
	for i, b := range bs {
		if i != victim {
			rest = append(rest, b)
		}
	}
	leaderOf(t, rest, topic, 0)
	var start int64 = -1
	waitFor(t, 30*time.Second, func() bool {
		lo, err := kadm.NewClient(clusterClient(t, rest)).ListStartOffsets(ctxFor(t, 10*time.Second), topic)
		if err != nil || lo.Error() != nil {
			return false
		}
		o, _ := lo.Lookup(topic, 0)
		start = o.Offset
		return true
	})
	if start != 60 {
		t.Fatalf("after failover the log starts at %d, want 60 (deleted records came back)", start)
	}
}

// consumeGroupOnce joins group with a fresh member, reads until want records arrived,
// commits them and leaves; it returns the values read.
func consumeGroupOnce(t *testing.T, bs []*Broker, group, topic string, want int) []string {
	t.Helper()
	cl := clusterClient(t, bs, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(200*time.Millisecond))
	ctx := ctxFor(t, 60*time.Second)
	var values []string
	for len(values) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group %s read %d of %d records", group, len(values), want)
		}
		fs.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	cl.Close()
	return values
}

// TestClusterGroupOffsetsSurviveCoordinatorKill: __consumer_offsets is replicated, so a
// group's committed offsets survive kill -9 of its coordinator, and a new member resumes
// exactly where the group committed.
func TestClusterGroupOffsetsSurviveCoordinatorKill(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3)
	adm := kadm.NewClient(clusterClient(t, bs))
	setCluster(t, adm, "group.initial.rebalance.delay.ms", "0")
	const topic, group = "grp", "g1"
	createReplicatedTopic(t, adm, topic, 3, 3)
	prod := clusterClient(t, bs, kgo.DefaultProduceTopic(topic))
	produceSync(t, prod, topic, "a", 90)
	if got := consumeGroupOnce(t, bs, group, topic, 90); len(got) != 90 {
		t.Fatalf("first member read %d records", len(got))
	}
	// __consumer_offsets was created on the first FindCoordinator with RF 3.
	md, err := adm.Metadata(ctxFor(t, 10*time.Second), "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range md.Topics["__consumer_offsets"].Partitions {
		if len(p.Replicas) != 3 {
			t.Fatalf("__consumer_offsets partition %d has replicas %v, want 3", p.Partition, p.Replicas)
		}
	}
	dg, err := adm.DescribeGroups(ctxFor(t, 10*time.Second), group)
	if err != nil || dg.Error() != nil {
		t.Fatalf("DescribeGroups: %v %v", err, dg.Error())
	}
	coord := dg[group].Coordinator.NodeID
	bs[coord-1].Kill9()
	var rest []*Broker
	for _, b := range bs {
		if b.opts.NodeID != int(coord) {
			rest = append(rest, b)
		}
	}
	produceSync(t, clusterClient(t, rest, kgo.DefaultProduceTopic(topic)), topic, "b", 30)
	got := consumeGroupOnce(t, rest, group, topic, 30)
	for _, v := range got {
		if !strings.HasPrefix(v, "b-") {
			t.Errorf("after the coordinator was killed the group re-read %q: its commit was lost", v)
		}
	}
}

// TestClusterFollowerCatchesUpBySnapshot: a follower that was down while the leader's log
// start moved past everything it holds (DeleteRecords removed those segments) catches up
// through a Raft snapshot, then serves as leader with the same offsets.
func TestClusterFollowerCatchesUpBySnapshot(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3)
	const topic = "snap"
	adm := kadm.NewClient(clusterClient(t, bs))
	resp, err := adm.CreateTopic(ctxFor(t, 30*time.Second), 1, 3, map[string]*string{"segment.bytes": kadm.StringPtr("4096")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("CreateTopics: %v %v", err, resp.Err)
	}
	leader := leaderOf(t, bs, topic, 0)
	lagger := (leader + 1) % 3
	prod := clusterClient(t, bs, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceSync(t, prod, topic, "early", 50)
	bs[lagger].Kill9()
	produceSync(t, prod, topic, "late", 300)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 300})
	if dr, err := adm.DeleteRecords(ctxFor(t, 20*time.Second), offs); err != nil || dr.Error() != nil {
		t.Fatalf("DeleteRecords: %v %v", err, dr.Error())
	}
	bs[lagger].Restart()
	// The lagger gets the leader's log from offset 300 on, by snapshot.
	waitFor(t, 60*time.Second, func() bool {
		st, ok := adminPartition(bs[lagger], topic, 0)
		return ok && st.LogStart == 300 && st.LogEnd == 350
	})
	// Make it the only way forward: stop the two others' leadership by killing the leader,
	// then read everything left through whoever leads now.
	bs[leader].Kill9()
	var rest []*Broker
	for i, b := range bs {
		if i != leader {
			rest = append(rest, b)
		}
	}
	leaderOf(t, rest, topic, 0)
	got := consumeFrom(t, func(o ...kgo.Opt) *kgo.Client { return clusterClient(t, rest, o...) }, topic,
		map[int32]kgo.Offset{0: kgo.NewOffset().AtStart()}, 50, 60*time.Second)
	for i, r := range got {
		if r.Offset != int64(300+i) || string(r.Value) != fmt.Sprintf("late-%d", 250+i) {
			t.Fatalf("record %d: offset %d value %q, want offset %d value late-%d", i, r.Offset, r.Value, 300+i, 250+i)
		}
	}
}

// TestClusterForwardingOff: with --produce-forwarding=false a broker that does not lead
// the partition answers NOT_LEADER_OR_FOLLOWER and stores nothing, and clients that follow
// the metadata still produce through the leader.
func TestClusterForwardingOff(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3, "--produce-forwarding=false")
	const topic = "nofwd"
	createReplicatedTopic(t, bs[0].Admin(t), topic, 1, 3)
	leader := leaderOf(t, bs, topic, 0)
	follower := bs[(leader+1)%3]
	cl := clusterClient(t, bs)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = kafkatest.Batch{Values: [][]byte{[]byte("refused")}, Timestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}.Bytes()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Broker(follower.opts.NodeID).Request(ctxFor(t, 20*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to a follower with forwarding off: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
	acked := produceSync(t, clusterClient(t, bs, kgo.DefaultProduceTopic(topic)), topic, "ok", 20)
	got := consumeAll(t, bs[leader], topic, 1, 20)
	checkAckedReadable(t, acked, got)
	for _, r := range got {
		if string(r.Value) == "refused" {
			t.Fatal("the refused record was stored")
		}
	}
}

// TestClusterWholeClusterKill9: every broker is killed at once and all restart together;
// the controller group recovers by itself (a restarted broker learns where its peers are
// from its own log) and every acknowledged record is still there.
func TestClusterWholeClusterKill9(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3)
	const topic = "whole"
	createReplicatedTopic(t, bs[0].Admin(t), topic, 3, 3)
	acked := produceSync(t, clusterClient(t, bs, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks())), topic, "w", 150)
	for _, b := range bs {
		b.Kill9()
	}
	launchTogether(t, bs)
	checkAckedReadable(t, acked, consumeAll(t, bs[1], topic, 3, 150))
	more := produceSync(t, clusterClient(t, bs, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks())), topic, "x", 30)
	checkAckedReadable(t, more, consumeAll(t, bs[2], topic, 3, 180))
}
