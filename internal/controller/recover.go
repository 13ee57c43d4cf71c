package controller

import (
	"math"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Force recovery is the disaster procedure for a partition that lost a majority of its
// replicas for good (DESIGN.md §8): raft cannot move on by itself, and must not pretend
// to. ForceRecoverPartition, confirmed by an operator, names the dead replicas and the
// surviving one to rebuild from (Base, the survivor holding the most of the log). Applying
// it gives the partition a new Raft group id, so that no message of the old group, from a
// dead replica that comes back after all, ever reaches the new one; makes Base its only
// replica (Base's broker forces its own replica to be the group's only voter, from its own
// data); and records a move from Base to every survivor, whose brokers drop what they held
// and catch up from Base as learners, as any move adds replicas. The replication factor is
// restored afterwards by an ordinary move (or by decommissioning the dead brokers).

// Recovery records a partition's last force recovery, for the brokers that still hold data
// of the group it replaced.
type Recovery struct {
	FromGroup uint64 `json:"from_group"` // the Raft group id before the recovery
	Base      int32  `json:"base"`       // the replica rebuilt from: its data of FromGroup is kept
}

// ForceRecoverPartition rebuilds a partition from its survivors. Dead must be replicas of
// it (Topic.Replicas) that are not live, enough of them that the survivors no longer hold
// a majority of the assignment (or of a move's target); Base must be a survivor.
type ForceRecoverPartition struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Dead      []int32 `json:"dead"`
	Base      int32   `json:"base"`
}

func (ForceRecoverPartition) op() string { return "force_recover_partition" }

// LostMajority is a partition whose surviving replicas hold no majority once the given
// brokers are gone (State.MajorityLost).
type LostMajority struct {
	Topic     string
	Partition int32
	Group     uint64  // the partition's current Raft group id
	Replicas  []int32 // Topic.Replicas: every broker that may hold a replica
	Dead      []int32 // the replicas among the brokers said to be gone
	Survivors []int32 // the other replicas, in Replicas' order
}

// lostMajority reports whether losing dead leaves partition p without a majority of its
// assignment, or, while it moves towards a target, of that target (the group may be in
// the joint configuration, which needs both).
func lostMajority(t *Topic, p int32, dead []int32) bool {
	lost := func(set []int32) bool {
		alive := 0
		for _, id := range set {
			if !slices.Contains(dead, id) {
				alive++
			}
		}
		return len(set) > 0 && 2*alive <= len(set)
	}
	if lost(t.Assignment[p]) {
		return true
	}
	r, moving := t.Reassigning[p]
	return moving && !r.Cancelled && lost(r.Target)
}

// MajorityLost lists the partitions that lose their majority if every broker in dead is
// gone, by topic then partition.
func (s *State) MajorityLost(dead []int32) []LostMajority {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []LostMajority
	for _, t := range s.topics {
		for p := range t.Assignment {
			reps := t.Replicas(int32(p))
			var gone, alive []int32
			for _, id := range reps {
				if slices.Contains(dead, id) {
					gone = append(gone, id)
				} else {
					alive = append(alive, id)
				}
			}
			if len(gone) == 0 || !lostMajority(t, int32(p), dead) {
				continue
			}
			out = append(out, LostMajority{Topic: t.Name, Partition: int32(p), Group: t.Groups[p], Replicas: reps, Dead: gone, Survivors: alive})
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

// CheckForceRecover runs Apply's checks of c against the state as it is now.
func (s *State) CheckForceRecover(c ForceRecoverPartition) (*kerr.Error, string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, _, e := s.checkForceRecover(&c); e != nil {
		return e.code, e.msg
	}
	return nil, ""
}

// checkForceRecover validates c and returns the partition's topic and its survivors, Base
// first.
func (s *State) checkForceRecover(c *ForceRecoverPartition) (*Topic, []int32, *applyErr) {
	t, e := s.partitionOf(c.Topic, c.Partition)
	if e != nil {
		return nil, nil, e
	}
	if len(t.Groups) != len(t.Assignment) {
		return nil, nil, reject(kerr.InvalidRequest, "partition %s-%d has no Raft group id yet", c.Topic, c.Partition)
	}
	reps := t.Replicas(c.Partition)
	if len(c.Dead) == 0 {
		return nil, nil, reject(kerr.InvalidRequest, "partition %s-%d: name the dead replicas", c.Topic, c.Partition)
	}
	for i, id := range c.Dead {
		switch b := s.brokers[id]; {
		case slices.Contains(c.Dead[:i], id):
			return nil, nil, reject(kerr.InvalidRequest, "partition %s-%d: broker %d is named twice", c.Topic, c.Partition, id)
		case !slices.Contains(reps, id):
			return nil, nil, reject(kerr.InvalidRequest, "partition %s-%d: broker %d holds no replica of it (replicas %v)", c.Topic, c.Partition, id, reps)
		case b != nil && b.Live:
			return nil, nil, reject(kerr.InvalidRequest, "partition %s-%d: broker %d is alive; a live replica is not lost (stop it for good first)", c.Topic, c.Partition, id)
		}
	}
	if !lostMajority(t, c.Partition, c.Dead) {
		return nil, nil, reject(kerr.InvalidRequest, "partition %s-%d keeps a majority of %v without %v: raft recovers it by itself; change its replicas with a move", c.Topic, c.Partition, t.Assignment[c.Partition], c.Dead)
	}
	survivors := []int32{c.Base}
	for _, id := range reps {
		if !slices.Contains(c.Dead, id) && id != c.Base {
			survivors = append(survivors, id)
		}
	}
	if slices.Contains(c.Dead, c.Base) || !slices.Contains(reps, c.Base) {
		return nil, nil, reject(kerr.InvalidRequest, "partition %s-%d: broker %d is not a surviving replica (survivors %v)", c.Topic, c.Partition, c.Base, survivors[1:])
	}
	if s.nextGroup == math.MaxUint64 {
		return nil, nil, reject(kerr.InvalidRequest, "no Raft group id left")
	}
	return t, survivors, nil
}

func (s *State) forceRecoverPartition(c *ForceRecoverPartition) *applyErr {
	t, survivors, e := s.checkForceRecover(c)
	if e != nil {
		return e
	}
	p := c.Partition
	old := t.Groups[p]
	delete(s.groups, old)
	t.Groups[p] = s.nextGroup
	s.groups[s.nextGroup] = groupRef{topic: t.Name, partition: p}
	s.nextGroup++
	if t.Recovered == nil {
		t.Recovered = map[int32]Recovery{}
	}
	t.Recovered[p] = Recovery{FromGroup: old, Base: c.Base}
	t.Assignment[p] = []int32{c.Base}
	if t.Moved == nil {
		t.Moved = make([]bool, len(t.Assignment))
	}
	t.Moved[p] = true
	delete(t.Reassigning, p)
	if len(survivors) > 1 {
		if t.Reassigning == nil {
			t.Reassigning = map[int32]Reassignment{}
		}
		t.Reassigning[p] = Reassignment{Original: []int32{c.Base}, Target: survivors}
	}
	if len(t.Reassigning) == 0 {
		t.Reassigning = nil
	}
	return nil
}

// checkRecoveries validates a decoded topic's recovery records.
func checkRecoveries(t *Topic, nextGroup uint64) *applyErr {
	for p, r := range t.Recovered {
		switch {
		case p < 0 || int(p) >= len(t.Assignment):
			return reject(kerr.InvalidRequest, "topic %q records a recovery of partition %d, which it does not have", t.Name, p)
		case !t.HasMoved(p):
			return reject(kerr.InvalidRequest, "topic %q partition %d was recovered but is not marked moved", t.Name, p)
		case r.FromGroup < 1 || r.FromGroup >= nextGroup || (int(p) < len(t.Groups) && r.FromGroup == t.Groups[p]):
			return reject(kerr.InvalidRequest, "topic %q partition %d: recovered from group id %d, which is not an earlier group", t.Name, p, r.FromGroup)
		case r.Base < 0:
			return reject(kerr.InvalidRequest, "topic %q partition %d: recovered from broker id %d", t.Name, p, r.Base)
		}
	}
	return nil
}
