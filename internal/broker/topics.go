package broker

import (
	"crypto/rand"
	"errors"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/controller"
)

// Topic lifecycle: creating topics (placed, or on the replicas a CreateTopics request
// names), auto-creation, deletion and new partitions, each proposed to the controller.

// place assigns replicas to new partitions over the live brokers, rack-aware.
func (b *Broker) place(partitions int32, rf int16) ([][]int32, *Error) {
	brokers, load := b.state().Placement()
	var seed [1]byte
	rand.Read(seed[:])
	a, err := controller.Place(brokers, load, int(partitions), int(rf), int(seed[0]))
	if err != nil {
		var pe *controller.PlacementError
		if errors.As(err, &pe) {
			return nil, &Error{Code: pe.Code, Msg: pe.Msg}
		}
		return nil, errorf(kerr.InvalidReplicationFactor, "%v", err)
	}
	return a, nil
}

// CreateTopic creates a topic; partitions and rf of -1 take the cluster defaults. It waits
// (a bounded time) until every partition has a leader, so clients can use it at once.
func (b *Broker) CreateTopic(name string, partitions int32, rf int16, configs map[string]string, validateOnly bool) (TopicInfo, *Error) {
	return b.CreateTopicOn(name, partitions, rf, nil, configs, validateOnly)
}

// CreateTopicOn is CreateTopic with the replicas of each partition given (CreateTopics'
// manual assignment, already checked to name live brokers, each once, with one count of
// replicas for every partition) instead of placed; nil places them.
func (b *Broker) CreateTopicOn(name string, partitions int32, rf int16, assignment [][]int32, configs map[string]string, validateOnly bool) (TopicInfo, *Error) {
	if err := ValidateTopicName(name); err != nil {
		return TopicInfo{}, err
	}
	if _, ok := b.state().Topic(name); ok {
		return TopicInfo{}, errorf(kerr.TopicAlreadyExists, "topic %q already exists", name)
	}
	cc := config.ResolveCluster(b.state().ClusterConfig())
	if partitions == -1 {
		partitions = cc.NumPartitions
	}
	if rf == -1 {
		rf = cc.DefaultReplicationFactor
	}
	if partitions < 1 {
		return TopicInfo{}, errorf(kerr.InvalidPartitions, "partition count must be at least 1, got %d", partitions)
	}
	if partitions > maxPartitionsPerTopic {
		return TopicInfo{}, errorf(kerr.InvalidPartitions, "partition count %d is above the limit of %d", partitions, maxPartitionsPerTopic)
	}
	if rf < 1 {
		return TopicInfo{}, errorf(kerr.InvalidReplicationFactor, "replication factor must be at least 1, got %d", rf)
	}
	if live := int16(len(b.state().LiveBrokers())); rf > live {
		return TopicInfo{}, errorf(kerr.InvalidReplicationFactor, "replication factor %d is larger than the %d available broker(s)", rf, live)
	}
	overrides := make(map[string]string, len(configs))
	for k, v := range configs {
		canon, err := config.ValidateTopic(k, v)
		if err != nil {
			return TopicInfo{}, errorf(kerr.InvalidConfig, "%s", err.Error())
		}
		overrides[k] = canon
	}
	return b.createTopicOn(name, partitions, rf, assignment, overrides, validateOnly)
}

func (b *Broker) createTopic(name string, partitions int32, rf int16, overrides map[string]string, validateOnly bool) (TopicInfo, *Error) {
	return b.createTopicOn(name, partitions, rf, nil, overrides, validateOnly)
}

func (b *Broker) createTopicOn(name string, partitions int32, rf int16, assignment [][]int32, overrides map[string]string, validateOnly bool) (TopicInfo, *Error) {
	if assignment == nil {
		var perr *Error
		if assignment, perr = b.place(partitions, rf); perr != nil {
			return TopicInfo{}, perr
		}
	}
	if err := b.checkNewPartitionRacks(name, overrides, assignment, 0); err != nil {
		return TopicInfo{}, err
	}
	cmd := controller.CreateTopic{Name: name, ID: newTopicID(), Partitions: partitions, RF: rf, Configs: overrides, Assignment: assignment}
	info := TopicInfo{Name: name, ID: cmd.ID, Partitions: partitions, ReplicationFactor: rf, Internal: strings.HasPrefix(name, "__")}
	if validateOnly {
		return info, nil
	}
	if _, err := b.propose(cmd); err != nil {
		return TopicInfo{}, err
	}
	b.lg.Info("created topic", "topic", name, "partitions", partitions, "replication_factor", rf)
	b.waitLeaders(name, 10*time.Second)
	return info, nil
}

// waitLeaders waits until every partition of the topic has a known leader, or d passes.
func (b *Broker) waitLeaders(name string, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && !b.closed.Load() {
		t, ok := b.state().Topic(name)
		if !ok {
			return
		}
		all := true
		for p := int32(0); p < t.Partitions(); p++ {
			if v := b.PartitionView(t, p); v.Leader < 0 {
				all = false
				break
			}
		}
		if all {
			return
		}
		select {
		case <-b.leaders.changed():
		case <-time.After(50 * time.Millisecond):
		case <-b.ctx.Done():
			return
		}
	}
}

func newTopicID() controller.TopicID {
	var id controller.TopicID
	rand.Read(id[:])
	return id
}

// AutoCreateTopic creates a topic with defaults when auto.create.topics.enable is on.
func (b *Broker) AutoCreateTopic(name string) (TopicInfo, *Error) {
	if !config.ResolveCluster(b.state().ClusterConfig()).AutoCreateTopics {
		return TopicInfo{}, errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist and auto.create.topics.enable is off", name)
	}
	info, err := b.CreateTopic(name, -1, -1, nil, false)
	if err != nil && err.Code == kerr.TopicAlreadyExists {
		info, _ = b.Topic(name)
		return info, nil
	}
	return info, err
}

// DeleteTopic removes a topic and its data.
func (b *Broker) DeleteTopic(name string) *Error {
	t, ok := b.state().Topic(name)
	if !ok {
		return errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
	}
	if IsInternalTopic(name) {
		return errorf(kerr.InvalidTopicException, "%s is an internal topic that holds coordinator state; it cannot be deleted", name)
	}
	if _, err := b.propose(controller.DeleteTopic{Name: name, ID: t.ID}); err != nil {
		return err
	}
	// Synchronously: a topic created again under this name must not have its first
	// commits tombstoned by a late cleanup.
	if b.groups != nil {
		b.groups.DeleteTopicOffsets(name)
	}
	b.lg.Info("deleted topic", "topic", name)
	return nil
}

// CreatePartitions raises a topic's partition count; it may only grow.
func (b *Broker) CreatePartitions(name string, count int32, validateOnly bool) *Error {
	t, ok := b.state().Topic(name)
	if !ok {
		return errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
	}
	cur := t.Partitions()
	switch {
	case IsInternalTopic(name):
		return errorf(kerr.InvalidPartitions, "%s keeps the partition count it was created with: its ids hash onto its partitions", name)
	case count < cur:
		return errorf(kerr.InvalidPartitions, "topic %q has %d partitions; the count may only increase", name, cur)
	case count == cur:
		return errorf(kerr.InvalidPartitions, "topic %q already has %d partitions", name, cur)
	case count > maxPartitionsPerTopic:
		return errorf(kerr.InvalidPartitions, "partition count %d is above the limit of %d", count, maxPartitionsPerTopic)
	}
	if live := int16(len(b.state().LiveBrokers())); t.RF > live {
		return errorf(kerr.InvalidReplicationFactor, "the topic's replication factor %d is larger than the %d available broker(s)", t.RF, live)
	}
	assignment, perr := b.place(count-cur, t.RF)
	if perr != nil {
		return perr
	}
	if err := b.checkNewPartitionRacks(name, t.Configs, assignment, cur); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	if _, err := b.propose(controller.CreatePartitions{Name: name, NewAssignment: assignment}); err != nil {
		return err
	}
	b.waitLeaders(name, 10*time.Second)
	return nil
}
