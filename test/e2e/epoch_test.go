package e2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLeaderEpochs: Metadata, the admin API and stored batches agree on the leader epoch;
// Fetch and ListOffsets refuse a stale epoch (FENCED_LEADER_EPOCH) and a future one
// (UNKNOWN_LEADER_EPOCH); OffsetForLeaderEpoch answers where an epoch ended.
func TestLeaderEpochs(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "epochs"
	adm := b.Admin(t)
	createTopic(t, adm, topic, 1, nil)
	produceSync(t, b.Client(t, kgo.DefaultProduceTopic(topic)), topic, "e0", 5)
	e0 := b.Partition(t, topic, 0).LeaderEpoch

	b.Restart()
	produceSync(t, b.Client(t, kgo.DefaultProduceTopic(topic)), topic, "e1", 5)
	e1 := b.Partition(t, topic, 0).LeaderEpoch
	t.Logf("leader epoch %d before the restart, %d after", e0, e1)
	if e1 < e0 {
		t.Fatalf("leader epoch went back from %d to %d across a restart", e0, e1)
	}

	cl := b.Client(t)
	ctx := ctxFor(t, 30*time.Second)
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if got := md.Topics[topic].Partitions[0].LeaderEpoch; got != e1 {
		t.Errorf("Metadata leader epoch %d, admin API %d", got, e1)
	}
	recs := consumeAll(t, b, topic, 1, 10)
	for _, r := range recs {
		want := e0
		if r.Offset >= 5 {
			want = e1
		}
		if r.LeaderEpoch != want {
			t.Errorf("offset %d stored with leader epoch %d, want %d (the epoch it was appended in)", r.Offset, r.LeaderEpoch, want)
		}
	}

	fetchCode := func(epoch int32) int16 {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 100, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, 0, 1<<20, epoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	listCode := func(epoch int32) int16 {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -1, epoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	for _, c := range []struct {
		name  string
		epoch int32
		want  int16
	}{
		{"current", e1, 0},
		{"none", -1, 0},
		{"future", e1 + 1, 75},
	} {
		if got := fetchCode(c.epoch); got != c.want {
			t.Errorf("Fetch with the %s leader epoch %d: %s, want %s", c.name, c.epoch, kerrName(got), kerrName(c.want))
		}
		if got := listCode(c.epoch); got != c.want {
			t.Errorf("ListOffsets with the %s leader epoch %d: %s, want %s", c.name, c.epoch, kerrName(got), kerrName(c.want))
		}
	}
	if e1 > e0 {
		if got := fetchCode(e0); got != 74 {
			t.Errorf("Fetch with the stale leader epoch %d (current %d): %s, want %s", e0, e1, kerrName(got), kerrName(74))
		}
		if got := listCode(e0); got != 74 {
			t.Errorf("ListOffsets with the stale leader epoch %d (current %d): %s, want %s", e0, e1, kerrName(got), kerrName(74))
		}
	} else {
		t.Logf("the leader epoch did not change across the restart; the stale-epoch checks need a second epoch")
	}
	// OffsetForLeaderEpoch: epoch e0 ended where e1's first record went (5), unless the
	// epoch did not change; the current epoch ends at the log end (10).
	ask := []struct {
		epoch int32
		end   int64
	}{{e1, 10}}
	if e1 > e0 {
		ask = append(ask, struct {
			epoch int32
			end   int64
		}{e0, 5})
	}
	for _, want := range ask {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, e1, want.epoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("OffsetForLeaderEpoch: %v", err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("OffsetForLeaderEpoch answered %+v", resp.Topics)
		}
		g := resp.Topics[0].Partitions[0]
		if g.ErrorCode != 0 || g.LeaderEpoch != want.epoch || g.EndOffset != want.end {
			t.Errorf("OffsetForLeaderEpoch epoch %d: %s leader epoch %d end offset %d; want NONE, %d, %d",
				want.epoch, kerrName(g.ErrorCode), g.LeaderEpoch, g.EndOffset, want.epoch, want.end)
		}
	}
	// A future epoch is unknown.
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, e1+1, e1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("OffsetForLeaderEpoch: %v", err)
	}
	if g := resp.Topics[0].Partitions[0]; g.ErrorCode != 75 {
		t.Errorf("OffsetForLeaderEpoch with current leader epoch %d (future): %s, want %s", e1+1, kerrName(g.ErrorCode), kerrName(75))
	}
}
