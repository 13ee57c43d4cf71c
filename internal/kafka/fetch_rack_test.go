package kafka

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/config"
)

// rackFetch is a consumer's Fetch v11 of partition 0 of topic from offset 0, sending rack.
func rackFetch(topic, rack string) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MaxBytes, req.Rack = 11, -1, 100, 1<<20, rack
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func fetchWith(t *testing.T, cl *kgo.Client, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// A RackId over 255 bytes refuses the whole Fetch with INVALID_REQUEST and reads nothing;
// the broker goes on serving, a 255-byte rack included, and a fetch from a replica
// (replica id set) is still refused, whatever the selector.
func TestFetchRackIDBadInput(t *testing.T) {
	addr, b := startBroker(t)
	createTopic(t, addr, "racks", 1, 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := b.SetClusterConfig(map[string]string{config.ClusterReplicaSelectorClass: config.RackAwareReplicaSelector}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "follower fetching on", 10*time.Second, b.FollowerFetching)

	resp := fetchWith(t, cl, rackFetch("racks", strings.Repeat("r", 256)))
	if resp.ErrorCode != kerr.InvalidRequest.Code || len(resp.Topics) != 0 {
		t.Fatalf("256-byte rack: error %v with %d topics, want INVALID_REQUEST and none", kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
	}
	resp = fetchWith(t, cl, rackFetch("racks", strings.Repeat("r", 255)))
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 {
		t.Fatalf("255-byte rack: error %v with %d topics", kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
	}
	// A sole replica leads in no other rack than its own: it serves the records itself.
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.PreferredReadReplica != -1 || len(p.RecordBatches) == 0 || p.HighWatermark != 3 {
		t.Fatalf("255-byte rack: %v, preferred %d, %d record bytes, hw %d", kerr.ErrorForCode(p.ErrorCode), p.PreferredReadReplica, len(p.RecordBatches), p.HighWatermark)
	}
	replica := rackFetch("racks", "r1")
	replica.ReplicaID = 2
	if resp := fetchWith(t, cl, replica); resp.ErrorCode != kerr.NotLeaderForPartition.Code || len(resp.Topics) != 0 {
		t.Fatalf("fetch from replica 2: %v with %d topics, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
	}
}

// replica.selector.class takes Kafka's two class names (and the empty value) at run time,
// with its source reported truthfully, and refuses any other class by naming the two.
func TestReplicaSelectorClassConfig(t *testing.T) {
	addr, b := startBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	describe := func() kadm.Config {
		t.Helper()
		rcs, err := adm.DescribeBrokerConfigs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, rc := range rcs {
			for _, c := range rc.Configs {
				if c.Key == config.ClusterReplicaSelectorClass {
					return c
				}
			}
		}
		t.Fatal("replica.selector.class not described")
		return kadm.Config{}
	}
	if c := describe(); c.MaybeValue() != "" || c.Source != kmsg.ConfigSourceDefaultConfig || b.FollowerFetching() {
		t.Fatalf("default: %q from %v, follower fetching %v", c.MaybeValue(), c.Source, b.FollowerFetching())
	}
	set := func(v string) kadm.AlterConfigsResponse {
		t.Helper()
		rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: config.ClusterReplicaSelectorClass, Value: kadm.StringPtr(v)}})
		if err != nil {
			t.Fatal(err)
		}
		return rs[0]
	}
	if r := set("com.example.NearestSelector"); r.Err != kerr.InvalidConfig ||
		!strings.Contains(r.ErrMessage, "Cairn implements only "+config.RackAwareReplicaSelector) || !strings.Contains(r.ErrMessage, config.LeaderSelector) {
		t.Fatalf("unknown class: %v %q", r.Err, r.ErrMessage)
	}
	if c := describe(); c.MaybeValue() != "" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("a refused class was stored: %q from %v", c.MaybeValue(), c.Source)
	}
	if r := set(config.RackAwareReplicaSelector); r.Err != nil {
		t.Fatal(r.Err, r.ErrMessage)
	}
	waitUntil(t, "follower fetching on", 10*time.Second, b.FollowerFetching)
	if c := describe(); c.MaybeValue() != config.RackAwareReplicaSelector || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("after set: %q from %v", c.MaybeValue(), c.Source)
	}
	if r := set(config.LeaderSelector); r.Err != nil {
		t.Fatal(r.Err, r.ErrMessage)
	}
	waitUntil(t, "follower fetching off", 10*time.Second, func() bool { return !b.FollowerFetching() })
}
