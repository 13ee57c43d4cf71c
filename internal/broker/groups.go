package broker

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/group"
	"github.com/cairn-io/cairn/internal/partition"
)

// Lock order: the group coordinator calls the broker (OffsetsPartition, PartitionCount,
// the config getter) while holding its own lock, so the broker never calls into the
// coordinator while holding b.mu.

// startGroups starts the group coordinator. __consumer_offsets is created on the first
// FindCoordinator, as Kafka does, so that its replication factor (min of
// offsets.topic.replication.factor and the live brokers) counts the brokers of a cluster
// that has finished starting. The coordinator serves the shards whose partition this
// broker leads (leadershipLoop moves them).
func (b *Broker) startGroups() {
	n := b.clusterConfig().OffsetsTopicNumPartitions
	if t, ok := b.state().Topic(group.OffsetsTopic); ok {
		n = t.Partitions()
	}
	b.groups = group.New(group.Options{
		Host:       groupHost{b},
		Partitions: n,
		Config:     b.clusterConfig,
		Logger:     b.lg,
	})
}

// ensureOffsetsTopic creates __consumer_offsets if it is missing.
func (b *Broker) ensureOffsetsTopic() *Error {
	cc := b.clusterConfig()
	return b.ensureInternalTopic(group.OffsetsTopic, b.groups.Partitions(), cc.OffsetsTopicReplicationFactor, map[string]string{
		config.TopicCleanupPolicy: "compact",
		config.TopicSegmentBytes:  strconv.Itoa(int(cc.OffsetsTopicSegmentBytes)),
	})
}

// ensureInternalTopic creates a coordinator's internal topic if it is missing, with the
// replication factor capped at the live brokers.
func (b *Broker) ensureInternalTopic(name string, partitions int32, rf int16, configs map[string]string) *Error {
	if _, ok := b.topic(name); ok {
		return nil
	}
	rf = max(1, min(rf, int16(len(b.state().LiveBrokers()))))
	_, err := b.createTopic(name, partitions, rf, configs, false)
	if err != nil && err.Code != kerr.TopicAlreadyExists {
		return err
	}
	if err != nil {
		// Created by a concurrent FindCoordinator whose reconcile may still be running:
		// wait for it, so the topic is known here.
		if rerr := b.reconcile(); rerr != nil {
			return errorf(kerr.CoordinatorNotAvailable, "opening %s: %v", name, rerr)
		}
		b.waitLeaders(name, 10*time.Second)
	}
	return nil
}

// Groups is the node's group coordinator.
func (b *Broker) Groups() *group.Coordinator { return b.groups }

// GroupCoordinator answers FindCoordinator for a group: the broker that leads the group's
// __consumer_offsets partition, or COORDINATOR_NOT_AVAILABLE when there is none yet.
func (b *Broker) GroupCoordinator(groupID string) (BrokerInfo, *kerr.Error) {
	if b.groups == nil || b.groups.Partitions() <= 0 {
		return BrokerInfo{}, kerr.CoordinatorNotAvailable
	}
	if err := b.ensureOffsetsTopic(); err != nil {
		b.lg.Warn("creating "+group.OffsetsTopic, "err", err)
		return BrokerInfo{}, kerr.CoordinatorNotAvailable
	}
	return b.shardLeader(group.OffsetsTopic, group.PartitionFor(groupID, b.groups.Partitions()), func() {
		b.moveGroupShards(b.ledOffsetsPartitions())
	})
}

// shardLeader is the broker that leads partition shard of a coordinator's internal topic,
// or COORDINATOR_NOT_AVAILABLE when there is none yet. When it is this broker, serveNow
// starts serving the shards this broker leads now rather than when the leadership loop
// next runs, so the client's next request finds them loading or loaded, not
// NOT_COORDINATOR.
func (b *Broker) shardLeader(topic string, shard int32, serveNow func()) (BrokerInfo, *kerr.Error) {
	t, ok := b.topic(topic)
	if !ok {
		return BrokerInfo{}, kerr.CoordinatorNotAvailable
	}
	v := b.PartitionView(*t, shard)
	if v.Leader < 0 {
		// Just created (here or by a concurrent request), or between leaders: an answer
		// is usually a few milliseconds away, which beats a client's retry backoff.
		b.waitLeaders(topic, 5*time.Second)
		if v = b.PartitionView(*t, shard); v.Leader < 0 {
			return BrokerInfo{}, kerr.CoordinatorNotAvailable
		}
	}
	if v.Leader == b.cfg.NodeID {
		serveNow()
	}
	bi, ok := b.broker(v.Leader)
	if !ok {
		return BrokerInfo{}, kerr.CoordinatorNotAvailable
	}
	return bi, nil
}

// groupHost is the broker as the coordinator sees it.
type groupHost struct{ b *Broker }

func (h groupHost) OffsetsPartition(i int32) *partition.Partition {
	p, err := h.b.Partition(group.OffsetsTopic, i)
	if err != nil || !p.IsLeader() {
		return nil
	}
	return p
}

func (h groupHost) PartitionCount(topic string) (int32, bool) {
	info, ok := h.b.Topic(topic)
	return info.Partitions, ok
}
