package broker

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/controller"
)

// The broker's side of a partition move's record: it checks an operator's request against
// what only a broker knows (the racks brokers declared, the topic's effective
// min.insync.racks), then proposes it to the controller, which validates it again at apply
// time against the state it is applied to. Driving raft through the move is not done
// here: the partition's leader does that from the record.

// ReassignmentInfo is one partition move in progress.
type ReassignmentInfo struct {
	Topic     string
	Partition int32
	Original  []int32 // the replicas when it began
	Target    []int32 // what the operator asked for, preferred leader first
	Adding    []int32 // Goal's replicas not in Original (controller.Reassignment.Adding)
	Removing  []int32 // the replicas that end up out (controller.Reassignment.Removing)
	Replicas  []int32 // every broker that may hold a replica meanwhile (controller.Topic.Replicas)
	Cancelled bool    // going back to Original
	Final     bool    // leaving the joint configuration: it can no longer be cancelled
	// Progress is the move driver's live report, nil when this broker knows none.
	Progress *MoveProgress
}

// AlterPartitionReassignment moves partition p of topic to replicas (preferred leader
// first), or with replicas nil cancels its move. Replicas equal to the current assignment
// is accepted and changes nothing, as in Kafka. The set may be larger or smaller than the
// topic's replication factor: that changes it for this partition. Every id must be
// registered (a broker that is down may be named: it catches up once back), and the
// target's declared racks must meet the topic's effective min.insync.racks.
func (b *Broker) AlterPartitionReassignment(topic string, p int32, replicas []int32) *Error {
	st := b.state()
	t, ok := st.Topic(topic)
	if !ok {
		return errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", topic)
	}
	if p < 0 || p >= t.Partitions() {
		return errorf(kerr.UnknownTopicOrPartition, "topic %q has no partition %d", topic, p)
	}
	if replicas == nil {
		_, err := b.propose(controller.CancelReassignment{Topic: topic, Partition: p})
		if err == nil {
			b.lg.Info("cancelling partition move", "topic", topic, "partition", p)
		}
		return err
	}
	begin := controller.BeginReassignment{Topic: topic, Partition: p, Replicas: slices.Clone(replicas)}
	if code, msg := st.CheckBeginReassignment(begin); code != nil {
		return &Error{Code: code, Msg: msg}
	}
	need := config.ResolveTopic(t.Configs, st.ClusterConfig()).MinInsyncRacks
	if short := controller.RackShortfalls(declaredRacks(st), [][]int32{replicas}, p, need); len(short) > 0 {
		return errorf(kerr.InvalidReplicaAssignment, "the topic's min.insync.racks=%d cannot be met by the target: %s",
			need, describeShortfalls([]topicShortfalls{{topic, short}}))
	}
	if slices.Equal(replicas, t.Assignment[p]) {
		return nil // as Kafka: nothing to move
	}
	if _, err := b.propose(begin); err != nil {
		return err
	}
	b.lg.Info("partition move recorded", "topic", topic, "partition", p, "from", t.Assignment[p], "to", replicas)
	return nil
}

// PartitionReassignments lists the moves in progress, by topic then partition. topics nil
// lists every move; otherwise only the topics it names, and of each, the partitions it
// lists (all of them where the list is nil). Partitions that do not move, and topics that
// do not exist, are left out, as in Kafka.
func (b *Broker) PartitionReassignments(topics map[string][]int32) []ReassignmentInfo {
	st := b.state()
	var out []ReassignmentInfo
	for _, r := range st.Reassignments() {
		if topics != nil {
			parts, named := topics[r.Topic]
			if !named || (parts != nil && !slices.Contains(parts, r.Partition)) {
				continue
			}
		}
		out = append(out, ReassignmentInfo{
			Topic: r.Topic, Partition: r.Partition,
			Original: r.Original, Target: r.Target, Adding: r.Adding(), Removing: r.Removing(), Replicas: r.Members(),
			Cancelled: r.Cancelled, Final: r.Final,
			Progress: b.reportedProgress(r.Group),
		})
	}
	return out
}

// String describes a move for logs and errors: "orders-2 [1 2 3] -> [4 5 6]".
func (r ReassignmentInfo) String() string {
	s := fmt.Sprintf("%s-%d %v -> %v", r.Topic, r.Partition, r.Original, r.Target)
	if r.Cancelled {
		s += " (cancelled)"
	}
	return s
}

// PartitionAssignment returns partition p's committed replica set, the preferred leader
// first: while it moves, the replicas it began with.
func (b *Broker) PartitionAssignment(topic string, p int32) ([]int32, bool) {
	return b.state().Assignment(topic, p)
}
