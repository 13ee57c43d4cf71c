package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/recordbatch"
	"github.com/cairn-io/cairn/test/chaos/faults"
)

// Follower fetching (KIP-392) over the wire: with replica.selector.class the rack-aware
// selector, real consumers in a rack read from that rack's replica, as each broker's Fetch
// response bytes show; a follower cut off from its leader serves nothing above the bound
// it was told before the cut and then sends consumers to the leader; a consumer whose
// follower dies goes back to the leader.

const rackAware = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// enableFollowerFetching sets replica.selector.class cluster-wide.
func enableFollowerFetching(t *testing.T, adm *kadm.Client) {
	t.Helper()
	rs, err := adm.AlterBrokerConfigs(ctxFor(t, 10*time.Second), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "replica.selector.class", Value: kadm.StringPtr(rackAware)}})
	if err != nil || rs[0].Err != nil {
		t.Fatalf("setting replica.selector.class: %v %v %s", err, rs, rs[0].ErrMessage)
	}
}

// fetchBytes is what broker b has answered to Fetch requests, in bytes.
func fetchBytes(t *testing.T, b *Broker) float64 {
	t.Helper()
	v, _ := b.Metric(t, "cairn_kafka_response_bytes_total", `{api="Fetch"}`)
	return v
}

// fetchRequest is a consumer's Fetch v11 of partition 0 of topic from offset, with rack.
func fetchRequest(topic, rack string, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MaxBytes, req.Rack = 11, -1, 50, 1<<20, rack
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = offset, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// rawFetch sends fetchRequest(topic, rack, offset) on rc and returns its one partition.
func rawFetch(t *testing.T, rc *rawConn, topic, rack string, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	resp, err := rc.roundTrip(fetchRequest(topic, rack, offset))
	if err != nil {
		t.Fatalf("Fetch v11 to %s: %v", rc.c.RemoteAddr(), err)
	}
	fr := resp.(*kmsg.FetchResponse)
	if fr.ErrorCode != 0 || len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		t.Fatalf("Fetch v11 to %s: error %s, %d topics", rc.c.RemoteAddr(), kerrName(fr.ErrorCode), len(fr.Topics))
	}
	return fr.Topics[0].Partitions[0]
}

// rawListLatest sends a consumer's ListOffsets (latest) of partition 0 of topic on rc.
func rawListLatest(t *testing.T, rc *rawConn, topic string) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID = 4, -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := rc.roundTrip(req)
	if err != nil {
		t.Fatalf("ListOffsets to %s: %v", rc.c.RemoteAddr(), err)
	}
	return resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
}

// lastOffset is the offset of the last record in a Fetch answer's record batches (-1: none).
func lastOffset(t *testing.T, raw []byte) int64 {
	t.Helper()
	last := int64(-1)
	for {
		h, ok := recordbatch.ParseHeader(raw)
		if !ok || h.Size() > int64(len(raw)) {
			return last // the end, or a partial batch there, as Kafka allows
		}
		last = h.BaseOffset + int64(h.LastOffsetDelta)
		raw = raw[h.Size():]
	}
}

// produceValues writes n records of size bytes each to partition 0 of topic, acks=all
// (uncompressed, where the payload's size is to be seen in Fetch bytes).
func produceValues(t *testing.T, cl *kgo.Client, topic string, n, size int) {
	t.Helper()
	var rs []*kgo.Record
	for i := range n {
		v := []byte(fmt.Sprintf("%06d", i) + strings.Repeat("v", size-6))
		rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Value: v})
	}
	if err := cl.ProduceSync(ctxFor(t, 60*time.Second), rs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
}

// TestFollowerFetchFromRack: franz-go's kgo.Rack and kcat's client.rack read from the
// replica in their rack, not the leader: each follower's Fetch bytes grow by at least the
// payload, the leader's by less than a tenth of it (redirects carry no records). A follower
// answers ListOffsets too; a broker without a replica points such a consumer to the leader;
// a RackId over 255 bytes is refused and the broker serves on.
func TestFollowerFetchFromRack(t *testing.T) {
	racks := []string{"r1", "r2", "r3", "r4"}
	bs := startClusterInRacks(t, racks)
	cl := clusterClient(t, bs, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	enableFollowerFetching(t, adm)
	const topic, n, size = "nearest", 200, 4096
	createReplicatedTopic(t, adm, topic, 1, 3)
	produceValues(t, cl, topic, n, size)
	payload := float64(n * size)
	leader := leaderOf(t, bs, topic, 0)
	replicas := bs[leader].Partition(t, topic, 0).Replicas
	var followers []int
	outsider := -1
	for i := range bs {
		switch {
		case !slices.Contains(replicas, int32(i+1)):
			outsider = i
		case i != leader:
			followers = append(followers, i)
		}
	}
	// The leader points a consumer in a follower's rack there once that follower holds the
	// records and the selector reached the leader.
	rc := dialRaw(t, bs[leader].KafkaAddr)
	for _, f := range followers {
		waitFor(t, 30*time.Second, func() bool {
			return rawFetch(t, rc, topic, racks[f], 0).PreferredReadReplica == int32(f+1)
		})
	}
	// A follower's latest is the last visible offset its leader told it of, which trails the
	// leader's by up to a heartbeat (and the selector above does not wait for it).
	fc := dialRaw(t, bs[followers[0]].KafkaAddr)
	var latest kmsg.ListOffsetsResponseTopicPartition
	if !eventually(30*time.Second, func() bool {
		latest = rawListLatest(t, fc, topic)
		return latest.ErrorCode == 0 && latest.Offset == n
	}) {
		t.Errorf("ListOffsets latest on follower %d: %s, offset %d, want %d", followers[0]+1, kerrName(latest.ErrorCode), latest.Offset, n)
	}
	// A broker without a replica learns the leader from the leader's list, sent on a role
	// change: the topic is moments old, so it may not know it yet (and answers
	// NOT_LEADER_OR_FOLLOWER, on which a client refreshes its metadata).
	oc := dialRaw(t, bs[outsider].KafkaAddr)
	var op kmsg.FetchResponseTopicPartition
	if !eventually(30*time.Second, func() bool {
		op = rawFetch(t, oc, topic, racks[outsider], 0)
		return op.PreferredReadReplica == int32(leader+1) && len(op.RecordBatches) == 0
	}) {
		t.Errorf("broker %d, without a replica: %s, preferred read replica %d, %d record bytes; want the leader %d",
			outsider+1, kerrName(op.ErrorCode), op.PreferredReadReplica, len(op.RecordBatches), leader+1)
	}
	resp, err := fc.roundTrip(fetchRequest(topic, strings.Repeat("r", 256), 0))
	if err != nil {
		t.Fatal(err)
	}
	if fr := resp.(*kmsg.FetchResponse); fr.ErrorCode != kerr.InvalidRequest.Code || len(fr.Topics) != 0 {
		t.Errorf("a 256-byte RackId: %s with %d topics, want INVALID_REQUEST and none", kerrName(fr.ErrorCode), len(fr.Topics))
	}

	consumed := func(f int, read func()) {
		t.Helper()
		before := make([]float64, len(bs))
		for i, b := range bs {
			before[i] = fetchBytes(t, b)
		}
		read()
		grew := func(i int) float64 { return fetchBytes(t, bs[i]) - before[i] }
		if g := grew(f); g < payload {
			t.Errorf("rack %s: broker %d answered %.0f Fetch bytes for a %.0f-byte payload", racks[f], f+1, g, payload)
		}
		if g := grew(leader); g >= payload/10 {
			t.Errorf("rack %s: the leader (broker %d) answered %.0f Fetch bytes, a tenth of the payload or more", racks[f], leader+1, g)
		}
	}
	consumed(followers[0], func() {
		got := consumeFrom(t, func(opts ...kgo.Opt) *kgo.Client {
			return clusterClient(t, bs, append(opts, kgo.Rack(racks[followers[0]]))...)
		}, topic, map[int32]kgo.Offset{0: kgo.NewOffset().AtStart()}, n, 60*time.Second)
		if len(got) != n || got[0].Offset != 0 || got[n-1].Offset != n-1 {
			t.Fatalf("franz-go in rack %s read %d records", racks[followers[0]], len(got))
		}
	})
	kcat := requireKcat(t)
	consumed(followers[1], func() {
		args := []string{"-C", "-b", bs[leader].KafkaAddr, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-c", fmt.Sprint(n),
			"-X", "client.rack=" + racks[followers[1]], "-f", `%o\n`}
		r := run(t, 60*time.Second, "", kcat, args...)
		if got := lines(r.Stdout); r.Err != nil || len(got) != n || got[n-1] != fmt.Sprint(n-1) {
			t.Fatalf("kcat %s read %d of %d records: %s", strings.Join(args, " "), len(got), n, r)
		}
	})
}

// TestFollowerFetchBoundWhileCutOff: a follower cut off from its leader (both directions)
// while acks=all writes go on through the third broker serves nothing above the bound it
// had before the cut (the leader's last visible offset as it was told it) and, once its
// leader's broker has been silent for an election timeout, sends consumers to the leader.
// Under write caching, where that bound is the leader's majority-replicated offset as the
// leader reports it, not the follower's commit.
func TestFollowerFetchBoundWhileCutOff(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	racks := []string{"r1", "r2", "r3"}
	c, err := faults.Start(ctx, faults.Options{N: 3, Binary: cairnBin, LogDir: t.TempDir(), Racks: racks})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	enableFollowerFetching(t, adm)
	const topic = "cutoff"
	caching := "true"
	if resp, err := adm.CreateTopic(ctxFor(t, 30*time.Second), 1, 3, map[string]*string{"write.caching": &caching}, topic); err != nil || resp.Err != nil {
		t.Fatalf("CreateTopics %s: %v %v", topic, err, resp.Err)
	}
	produceValues(t, cl, topic, 50, 100)
	status := func(id int) PartitionStatus {
		st, err := c.PartitionStatus(ctxFor(t, 5*time.Second), id, topic, 0)
		if err != nil {
			t.Fatalf("broker %d: %v", id, err)
		}
		return st
	}
	leader := 0
	waitFor(t, 30*time.Second, func() bool {
		for id := 1; id <= 3; id++ {
			if status(id).IsLeader {
				leader = id
				return true
			}
		}
		return false
	})
	follower := leader%3 + 1
	// The follower knows the leader's last visible offset (its reports come with the
	// leader's rounds and heartbeats); that is its bound for the rest of the test.
	var bound int64
	waitFor(t, 30*time.Second, func() bool {
		bound = status(follower).LastVisible
		return bound == 50 && status(leader).LastVisible == 50
	})
	if err := c.Partition(leader, follower); err != nil {
		t.Fatal(err)
	}
	defer c.HealAll()
	rc := dialRaw(t, c.Broker(follower).KafkaAddr)
	cut := time.Now()
	produceValues(t, cl, topic, 50, 100) // majority replicated on the leader and the third broker
	if st := status(leader); st.LastVisible <= bound {
		t.Fatalf("the leader's last visible offset is %d after the cut, not above %d", st.LastVisible, bound)
	}
	var served int
	waitFor(t, 30*time.Second, func() bool {
		p := rawFetch(t, rc, topic, racks[follower-1], 0)
		if p.HighWatermark > bound {
			t.Fatalf("%v after the cut the follower reports high watermark %d, above its bound %d", time.Since(cut), p.HighWatermark, bound)
		}
		if last := lastOffset(t, p.RecordBatches); last >= bound {
			t.Fatalf("%v after the cut the follower served offset %d, at or above its bound %d", time.Since(cut), last, bound)
		}
		if p.ErrorCode == 0 && p.PreferredReadReplica < 0 {
			served++
		}
		if p.PreferredReadReplica >= 0 && p.PreferredReadReplica != int32(leader) {
			t.Fatalf("the cut-off follower points to broker %d, not its leader %d", p.PreferredReadReplica, leader)
		}
		return p.PreferredReadReplica == int32(leader)
	})
	t.Logf("the cut-off follower served %d fetches within its bound %d, then sent the consumer to broker %d after %v", served, bound, leader, time.Since(cut))
	// The leader no longer points a consumer in the follower's rack there: it serves it.
	lc := dialRaw(t, c.Broker(leader).KafkaAddr)
	waitFor(t, 30*time.Second, func() bool {
		p := rawFetch(t, lc, topic, racks[follower-1], 0)
		return p.ErrorCode == 0 && p.PreferredReadReplica < 0 && len(p.RecordBatches) > 0
	})
}

// TestFollowerFetchFallbackWhenFollowerDies: a franz-go consumer reading from its rack's
// follower goes on reading through the leader once that follower is killed (after its
// RecheckPreferredReplicaInterval, shortened here from franz-go's 30 minutes).
func TestFollowerFetchFallbackWhenFollowerDies(t *testing.T) {
	t.Parallel()
	racks := []string{"r1", "r2", "r3"}
	bs := startClusterInRacks(t, racks)
	cl := clusterClient(t, bs, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	enableFollowerFetching(t, adm)
	const topic = "fallback"
	createReplicatedTopic(t, adm, topic, 1, 3)
	produceValues(t, cl, topic, 100, 100)
	leader := leaderOf(t, bs, topic, 0)
	f := (leader + 1) % 3
	rc := dialRaw(t, bs[leader].KafkaAddr)
	waitFor(t, 30*time.Second, func() bool {
		return rawFetch(t, rc, topic, racks[f], 0).PreferredReadReplica == int32(f+1)
	})
	consumer := clusterClient(t, bs, kgo.Rack(racks[f]), kgo.RecheckPreferredReplicaInterval(2*time.Second),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	poll := func(want int) {
		t.Helper()
		got := 0
		ctx := ctxFor(t, 90*time.Second)
		for got < want {
			fs := consumer.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumer in rack %s read %d of %d records", racks[f], got, want)
			}
			fs.EachError(func(topic string, p int32, err error) {
				if !kerr.IsRetriable(err) {
					t.Logf("fetch %s/%d: %v", topic, p, err)
				}
			})
			got += fs.NumRecords()
		}
	}
	before := fetchBytes(t, bs[f])
	poll(100)
	// The leader serves a fetch itself while its follower is not eligible (behind, or
	// outside the lag window for a moment on a loaded machine), and points the consumer at
	// the follower on a later fetch once it is: write more until the follower has served.
	for i := 0; fetchBytes(t, bs[f])-before < 100*100; i++ {
		if i == 10 {
			t.Fatalf("the consumer in rack %s did not read from broker %d", racks[f], f+1)
		}
		produceValues(t, cl, topic, 100, 100)
		poll(100)
	}
	bs[f].Kill9()
	// Read the leader's counter before producing: the consumer may already be back on the
	// leader and fetch the new records before produceValues returns.
	other := 3 - leader - f // the follower in another rack
	leaderBefore, otherBefore := fetchBytes(t, bs[leader]), fetchBytes(t, bs[other])
	produceValues(t, cl, topic, 100, 100)
	poll(100)
	// A broker counts a response once it has written it, so the consumer may hold the
	// records a moment before the leader's counter shows them.
	if !eventually(10*time.Second, func() bool { return fetchBytes(t, bs[leader])-leaderBefore >= 100*100 }) {
		up := []*Broker{bs[leader], bs[other]}
		t.Fatalf("after broker %d died the consumer read the rest from elsewhere than the leader %d: the leader served %.0f fetch bytes, broker %d %.0f; broker %d leads now",
			f+1, leader+1, fetchBytes(t, bs[leader])-leaderBefore, other+1, fetchBytes(t, bs[other])-otherBefore, up[leaderOf(t, up, topic, 0)].opts.NodeID)
	}
}
