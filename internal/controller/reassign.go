package controller

import (
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A partition move is log state first: BeginReassignment records the target, the
// partition's leader drives raft through learners and the joint configuration, records
// MarkReassignmentFinal before it proposes leaving joint (from then on a cancel would no
// longer be safe), and CompleteReassignment makes the goal the assignment. Until it
// completes, Assignment[p] stays the replicas the move began with, so that every reader
// that knows nothing of moves goes on seeing a consistent, committed replica set.
//
// A topic's deletion drops its moves with it (the leader's driver finds the group gone).
// CreatePartitions is allowed while partitions move: the new partitions start unmoved, on
// the replicas their command names.

// Reassignment is a partition's replica change in progress.
type Reassignment struct {
	Original  []int32 `json:"original"`            // the replicas when it began (Assignment[p] until it completes)
	Target    []int32 `json:"target"`              // what the operator asked for, preferred leader first
	Cancelled bool    `json:"cancelled,omitempty"` // the driver goes back to Original
	Final     bool    `json:"final,omitempty"`     // leaving the joint configuration: cancel refused
}

// Goal is the replica set the move ends at: Original once cancelled, Target otherwise.
func (r Reassignment) Goal() []int32 {
	if r.Cancelled {
		return slices.Clone(r.Original)
	}
	return slices.Clone(r.Target)
}

// Adding is the replicas of Goal that were not in Original, in Goal's order: the brokers
// that must open a replica and catch up as learners. A cancelled move adds nothing.
func (r Reassignment) Adding() []int32 { return minus(r.Goal(), r.Original) }

// Removing is every replica the move has touched (Original, then Target) that is not in
// Goal: for a move, the original replicas that leave; for a cancelled move, the target's
// new replicas, which may already hold a learner that must be removed again.
func (r Reassignment) Removing() []int32 {
	return minus(append(slices.Clone(r.Original), minus(r.Target, r.Original)...), r.Goal())
}

// Members is every broker that may hold a replica while the move runs: Goal first, then
// Removing, as Kafka lists a moving partition's replicas (target first, then removing).
func (r Reassignment) Members() []int32 { return append(r.Goal(), r.Removing()...) }

func (r Reassignment) clone() Reassignment {
	r.Original, r.Target = slices.Clone(r.Original), slices.Clone(r.Target)
	return r
}

// minus returns the members of a not in b, in a's order.
func minus(a, b []int32) []int32 {
	out := []int32{}
	for _, id := range a {
		if !slices.Contains(b, id) {
			out = append(out, id)
		}
	}
	return out
}

// Replicas returns partition p's replicas as Kafka lists them: Assignment[p], or while p
// moves, every broker that may hold a replica of it (Reassignment.Members). It returns nil
// for a partition the topic does not have.
func (t Topic) Replicas(p int32) []int32 {
	if p < 0 || int(p) >= len(t.Assignment) {
		return nil
	}
	if r, ok := t.Reassigning[p]; ok {
		return r.Members()
	}
	return slices.Clone(t.Assignment[p])
}

// HasMoved reports whether partition p has completed a reassignment at least once (a
// cancelled one included): a replica of it that opens with no data from then on joins the
// group and learns its configuration from the leader, instead of bootstrapping it from
// the assignment. Until the first move completes, the replicas of the assignment are the
// ones the group was created with, and one of them that opens fresh (a topic's replicas
// open at their own pace; a move may begin before they all have) bootstraps the same
// first entries as the others did, so the group forms even if none had opened yet.
func (t Topic) HasMoved(p int32) bool {
	return p >= 0 && int(p) < len(t.Moved) && t.Moved[p]
}

// BeginReassignment records a partition's target replica set. Replicas equal to the
// current assignment is accepted and records nothing, as in Kafka. Its size may differ
// from the topic's replication factor: that is a replication factor change.
type BeginReassignment struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

// CancelReassignment asks the driver to take a moving partition back to its original
// replicas. It is refused once the move is Final; cancelling a cancelled move is accepted
// and changes nothing.
type CancelReassignment struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// MarkReassignmentFinal is recorded by the partition's leader before it proposes leaving
// the joint configuration towards Goal: from then on the move can no longer be cancelled.
// Goal must be the record's Goal(), so that a leader acting on a stale view is refused.
type MarkReassignmentFinal struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Goal      []int32 `json:"goal"`
}

// CompleteReassignment ends a move once raft's configuration is Replicas: they become
// the assignment (their count may differ from the topic's RF) and the record is dropped.
type CompleteReassignment struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

func (BeginReassignment) op() string     { return "begin_reassignment" }
func (CancelReassignment) op() string    { return "cancel_reassignment" }
func (MarkReassignmentFinal) op() string { return "mark_reassignment_final" }
func (CompleteReassignment) op() string  { return "complete_reassignment" }

// PartitionReassignment is one move in progress, as State.Reassignments lists it.
type PartitionReassignment struct {
	Topic     string
	Partition int32
	Group     uint64 // the partition's Raft group id
	Reassignment
}

// partitionOf finds a topic's partition for a command, or rejects it.
func (s *State) partitionOf(topic string, p int32) (*Topic, *applyErr) {
	t, ok := s.topics[topic]
	if !ok {
		return nil, reject(kerr.UnknownTopicOrPartition, "topic %q does not exist", topic)
	}
	if p < 0 || int(p) >= len(t.Assignment) {
		return nil, reject(kerr.UnknownTopicOrPartition, "topic %q has no partition %d", topic, p)
	}
	return t, nil
}

// checkTarget validates a move's target replica set against the registered brokers.
func checkTarget(brokers map[int32]*Broker, topic string, p int32, replicas []int32) *applyErr {
	if len(replicas) == 0 {
		return reject(kerr.InvalidReplicaAssignment, "partition %s-%d: the target replica set is empty", topic, p)
	}
	for i, id := range replicas {
		switch {
		case id < 0:
			return reject(kerr.InvalidReplicaAssignment, "partition %s-%d: broker id %d is negative", topic, p, id)
		case slices.Contains(replicas[:i], id):
			return reject(kerr.InvalidReplicaAssignment, "partition %s-%d: broker %d is named twice", topic, p, id)
		case brokers[id] == nil:
			return reject(kerr.InvalidReplicaAssignment, "partition %s-%d: broker %d is not registered", topic, p, id)
		}
	}
	return nil
}

// CheckBeginReassignment runs the checks Apply would run on c against the state as it is
// now, so that a proposer can refuse a bad move before proposing it (and before its own
// checks, which assume a valid target). It returns the error code and why, or nil.
func (s *State) CheckBeginReassignment(c BeginReassignment) (*kerr.Error, string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, e := s.checkBegin(&c); e != nil {
		return e.code, e.msg
	}
	return nil, ""
}

// checkBegin validates a BeginReassignment: the partition exists, it is not moving, and
// the target is valid. The target is checked first, so that a bad one is named as such
// even while another move runs.
func (s *State) checkBegin(c *BeginReassignment) (*Topic, *applyErr) {
	t, e := s.partitionOf(c.Topic, c.Partition)
	if e != nil {
		return nil, e
	}
	if e := checkTarget(s.brokers, c.Topic, c.Partition, c.Replicas); e != nil {
		return nil, e
	}
	if _, busy := t.Reassigning[c.Partition]; busy {
		return nil, reject(kerr.ReassignmentInProgress, "partition %s-%d is already being reassigned; cancel that move first", c.Topic, c.Partition)
	}
	return t, nil
}

func (s *State) beginReassignment(c *BeginReassignment) *applyErr {
	t, e := s.checkBegin(c)
	if e != nil {
		return e
	}
	if slices.Equal(c.Replicas, t.Assignment[c.Partition]) {
		return nil
	}
	if t.Reassigning == nil {
		t.Reassigning = map[int32]Reassignment{}
	}
	t.Reassigning[c.Partition] = Reassignment{Original: slices.Clone(t.Assignment[c.Partition]), Target: slices.Clone(c.Replicas)}
	return nil
}

func (s *State) cancelReassignment(c *CancelReassignment) *applyErr {
	t, e := s.partitionOf(c.Topic, c.Partition)
	if e != nil {
		return e
	}
	r, ok := t.Reassigning[c.Partition]
	switch {
	case !ok:
		return reject(kerr.NoReassignmentInProgress, "partition %s-%d is not being reassigned", c.Topic, c.Partition)
	case r.Final:
		return reject(kerr.ReassignmentInProgress, "partition %s-%d: the partition is leaving its joint configuration; cancelling is no longer safe", c.Topic, c.Partition)
	}
	r.Cancelled = true
	t.Reassigning[c.Partition] = r
	return nil
}

func (s *State) markReassignmentFinal(c *MarkReassignmentFinal) *applyErr {
	t, e := s.partitionOf(c.Topic, c.Partition)
	if e != nil {
		return e
	}
	r, ok := t.Reassigning[c.Partition]
	switch {
	case !ok:
		return reject(kerr.NoReassignmentInProgress, "partition %s-%d is not being reassigned", c.Topic, c.Partition)
	case r.Cancelled:
		return reject(kerr.ReassignmentInProgress, "partition %s-%d: the move was cancelled; it goes back to %v", c.Topic, c.Partition, r.Original)
	case !slices.Equal(c.Goal, r.Goal()):
		return reject(kerr.InvalidReplicaAssignment, "partition %s-%d: the move's goal is %v, not %v", c.Topic, c.Partition, r.Goal(), c.Goal)
	}
	r.Final = true
	t.Reassigning[c.Partition] = r
	return nil
}

func (s *State) completeReassignment(c *CompleteReassignment) *applyErr {
	t, e := s.partitionOf(c.Topic, c.Partition)
	if e != nil {
		return e
	}
	r, ok := t.Reassigning[c.Partition]
	switch {
	case !ok:
		return reject(kerr.NoReassignmentInProgress, "partition %s-%d is not being reassigned", c.Topic, c.Partition)
	case !slices.Equal(c.Replicas, r.Goal()):
		return reject(kerr.InvalidReplicaAssignment, "partition %s-%d: the move's goal is %v, not %v", c.Topic, c.Partition, r.Goal(), c.Replicas)
	}
	t.Assignment[c.Partition] = r.Goal()
	if t.Moved == nil {
		t.Moved = make([]bool, len(t.Assignment))
	}
	t.Moved[c.Partition] = true
	delete(t.Reassigning, c.Partition)
	if len(t.Reassigning) == 0 {
		t.Reassigning = nil
	}
	return nil
}

// Reassignment returns partition p's move in progress, if any.
func (s *State) Reassignment(topic string, p int32) (Reassignment, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.topics[topic]
	if !ok {
		return Reassignment{}, false
	}
	r, ok := t.Reassigning[p]
	return r.clone(), ok
}

// Reassignments returns every move in progress, by topic then partition.
func (s *State) Reassignments() []PartitionReassignment {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []PartitionReassignment
	for _, t := range s.topics {
		for p, r := range t.Reassigning {
			out = append(out, PartitionReassignment{Topic: t.Name, Partition: p, Group: t.Groups[p], Reassignment: r.clone()})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// checkMoves validates a decoded topic's move records against its assignment, as Apply
// keeps them: each names a partition that has moved, starts from its assignment, has a
// valid target other than it, and is never both cancelled and final.
func checkMoves(brokers map[int32]*Broker, t *Topic) *applyErr {
	if len(t.Moved) != 0 && len(t.Moved) != len(t.Assignment) {
		return reject(kerr.InvalidRequest, "topic %q has %d partitions but %d moved flags", t.Name, len(t.Assignment), len(t.Moved))
	}
	for p, r := range t.Reassigning {
		switch {
		case p < 0 || int(p) >= len(t.Assignment):
			return reject(kerr.InvalidRequest, "topic %q moves partition %d, which it does not have", t.Name, p)
		case !slices.Equal(r.Original, t.Assignment[p]):
			return reject(kerr.InvalidRequest, "topic %q partition %d: the move began from %v, not its assignment %v", t.Name, p, r.Original, t.Assignment[p])
		case slices.Equal(r.Target, r.Original):
			return reject(kerr.InvalidRequest, "topic %q partition %d: the move's target is its assignment", t.Name, p)
		case r.Cancelled && r.Final:
			return reject(kerr.InvalidRequest, "topic %q partition %d: the move is both cancelled and final", t.Name, p)
		}
		if e := checkTarget(brokers, t.Name, p, r.Target); e != nil {
			return e
		}
	}
	return nil
}
