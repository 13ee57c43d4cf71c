package broker

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/group"
	"github.com/cairn-io/cairn/internal/partition"
)

// Lock order: the group coordinator calls the broker (OffsetsPartition, PartitionCount,
// the config getter) while holding its own lock, so the broker never calls into the
// coordinator while holding b.mu.

// EnsureInternalTopic creates an internal topic if it is missing, with configs stored as
// given: they are the broker's own choices, not a user's, so they skip user validation.
// It returns the topic, existing or new.
func (b *Broker) EnsureInternalTopic(name string, partitions int32, rf int16, configs map[string]string) (TopicInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.topics[name]; ok {
		return t.info, nil
	}
	tm := &topicMeta{Name: name, ID: newTopicID(), Partitions: partitions, ReplicationFactor: rf, Configs: copyMap(configs)}
	if err := b.addTopicLocked(tm); err != nil {
		return TopicInfo{}, err
	}
	b.lg.Info("created internal topic", "topic", name, "partitions", partitions, "replication_factor", rf)
	return tm.info(), nil
}

// startGroups creates __consumer_offsets when missing (offsets.topic.num.partitions and
// offsets.topic.replication.factor are read only now) and starts the group coordinator over
// the partitions this node leads.
func (b *Broker) startGroups() error {
	b.mu.RLock()
	cc := config.ResolveCluster(b.meta.Cluster)
	b.mu.RUnlock()
	rf := min(cc.OffsetsTopicReplicationFactor, int16(len(b.Brokers())))
	info, err := b.EnsureInternalTopic(group.OffsetsTopic, cc.OffsetsTopicNumPartitions, rf, map[string]string{
		config.TopicCleanupPolicy: "compact",
		config.TopicSegmentBytes:  strconv.Itoa(int(cc.OffsetsTopicSegmentBytes)),
	})
	if err != nil {
		return fmt.Errorf("creating %s: %w", group.OffsetsTopic, err)
	}
	b.groups = group.New(group.Options{
		Host:       groupHost{b},
		Partitions: info.Partitions,
		Config:     b.clusterConfig,
		Logger:     b.lg,
	})
	// A single node leads every partition.
	for i := int32(0); i < info.Partitions; i++ {
		b.groups.BecomeLeader(i)
	}
	return nil
}

func (b *Broker) clusterConfig() config.ClusterConfig {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return config.ResolveCluster(b.meta.Cluster)
}

// Groups is the node's group coordinator.
func (b *Broker) Groups() *group.Coordinator { return b.groups }

// GroupCoordinator answers FindCoordinator for a group: the broker that leads the group's
// __consumer_offsets partition, or COORDINATOR_NOT_AVAILABLE when there is none yet.
func (b *Broker) GroupCoordinator(groupID string) (BrokerInfo, *kerr.Error) {
	if b.groups == nil || b.groups.Partitions() <= 0 {
		return BrokerInfo{}, kerr.CoordinatorNotAvailable
	}
	p := group.PartitionFor(groupID, b.groups.Partitions())
	if _, err := b.Partition(group.OffsetsTopic, p); err != nil {
		return BrokerInfo{}, kerr.CoordinatorNotAvailable
	}
	// A single node leads every partition it holds.
	for _, bi := range b.Brokers() {
		if bi.NodeID == b.cfg.NodeID {
			return bi, nil
		}
	}
	return BrokerInfo{}, kerr.CoordinatorNotAvailable
}

// groupHost is the broker as the coordinator sees it.
type groupHost struct{ b *Broker }

func (h groupHost) OffsetsPartition(i int32) *partition.Partition {
	p, err := h.b.Partition(group.OffsetsTopic, i)
	if err != nil {
		return nil
	}
	return p
}

func (h groupHost) PartitionCount(topic string) (int32, bool) {
	info, ok := h.b.Topic(topic)
	return info.Partitions, ok
}
