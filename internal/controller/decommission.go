package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Decommission (DESIGN.md §8) is log state: DecommissionBroker marks a broker draining, so
// that placement of new partitions leaves it out and any controller leader, after any
// restart, resumes the work: moving every replica off it (BeginReassignment, a bounded
// number at a time), then removing it from group 0. MarkBrokerDecommissioned records the
// end, once it holds no replica and is out of group 0. RecommissionBroker, before the end,
// cancels the moves that take replicas off it and are not past their cancel point, and
// clears the mark; after the end it is refused.

// Membership statuses of a broker (Broker.Membership; "" is MembershipActive).
const (
	MembershipActive         = "active"
	MembershipDraining       = "draining"
	MembershipDecommissioned = "decommissioned"
)

// DecommissionBroker starts moving every replica off a broker. Refused for an unknown
// broker, one already draining or decommissioned, the last active broker, and when the
// other active brokers are too few to hold some partition's replicas.
type DecommissionBroker struct {
	ID int32 `json:"id"`
}

// RecommissionBroker stops a decommission before its end (see the package comment above).
type RecommissionBroker struct {
	ID int32 `json:"id"`
}

// MarkBrokerDecommissioned ends a decommission: the broker holds no replica (no partition's
// Replicas names it) and the proposer has removed it from group 0.
type MarkBrokerDecommissioned struct {
	ID int32 `json:"id"`
}

func (DecommissionBroker) op() string       { return "decommission_broker" }
func (RecommissionBroker) op() string       { return "recommission_broker" }
func (MarkBrokerDecommissioned) op() string { return "mark_broker_decommissioned" }

// MembershipStatus is the broker's membership as an operator reads it.
func (b Broker) MembershipStatus() string {
	if b.Membership == "" {
		return MembershipActive
	}
	return b.Membership
}

// Active reports whether the broker may receive new replicas: it is neither draining nor
// decommissioned.
func (b Broker) Active() bool { return b.Membership == "" }

// CheckDecommission runs the checks Apply would run on DecommissionBroker{ID: id} now.
func (s *State) CheckDecommission(id int32) (*kerr.Error, string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if e := s.checkDecommission(id); e != nil {
		return e.code, e.msg
	}
	return nil, ""
}

func (s *State) checkDecommission(id int32) *applyErr {
	b, ok := s.brokers[id]
	switch {
	case !ok:
		return reject(kerr.BrokerIDNotRegistered, "broker %d is not registered", id)
	case b.Membership == MembershipDraining:
		return reject(kerr.InvalidRequest, "broker %d is already being decommissioned", id)
	case b.Membership == MembershipDecommissioned:
		return reject(kerr.InvalidRequest, "broker %d is already decommissioned", id)
	}
	others := 0
	for _, o := range s.brokers {
		if o.ID != id && o.Active() {
			others++
		}
	}
	if others == 0 {
		return reject(kerr.InvalidRequest, "broker %d is the last active broker: there is nowhere to move its replicas", id)
	}
	for _, t := range s.sortedTopics() {
		for p := range t.Partitions() {
			replicas := t.Replicas(p)
			if !slices.Contains(replicas, id) {
				continue
			}
			if r, moving := t.Reassigning[p]; moving && !slices.Contains(r.Goal(), id) {
				continue // already moving off it
			}
			need := len(t.Assignment[p])
			if r, moving := t.Reassigning[p]; moving {
				need = len(r.Goal())
			}
			if need > others {
				return reject(kerr.InvalidReplicaAssignment, "partition %s-%d has %d replicas but only %d other active brokers could hold them", t.Name, p, need, others)
			}
		}
	}
	return nil
}

func (s *State) sortedTopics() []*Topic {
	out := make([]*Topic, 0, len(s.topics))
	for _, t := range s.topics {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Topic) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

func (s *State) decommissionBroker(c *DecommissionBroker) *applyErr {
	if e := s.checkDecommission(c.ID); e != nil {
		return e
	}
	s.brokers[c.ID].Membership = MembershipDraining
	return nil
}

func (s *State) recommissionBroker(c *RecommissionBroker) *applyErr {
	b, ok := s.brokers[c.ID]
	switch {
	case !ok:
		return reject(kerr.BrokerIDNotRegistered, "broker %d is not registered", c.ID)
	case b.Membership == MembershipDecommissioned:
		return reject(kerr.InvalidRequest, "broker %d is already decommissioned: it has left the cluster; start it with a new id and an empty directory to bring it back", c.ID)
	case b.Membership == "":
		return reject(kerr.InvalidRequest, "broker %d is not being decommissioned", c.ID)
	}
	for _, t := range s.topics {
		for p, r := range t.Reassigning {
			if r.Cancelled || r.Final || !slices.Contains(r.Original, c.ID) || slices.Contains(r.Target, c.ID) {
				continue
			}
			r.Cancelled = true
			t.Reassigning[p] = r
		}
	}
	b.Membership = ""
	return nil
}

func (s *State) markBrokerDecommissioned(c *MarkBrokerDecommissioned) *applyErr {
	b, ok := s.brokers[c.ID]
	switch {
	case !ok:
		return reject(kerr.BrokerIDNotRegistered, "broker %d is not registered", c.ID)
	case b.Membership != MembershipDraining:
		return reject(kerr.InvalidRequest, "broker %d is %s, not draining", c.ID, b.MembershipStatus())
	}
	if n := s.replicaLoad()[c.ID]; n > 0 {
		return reject(kerr.InvalidRequest, "broker %d still holds %d replicas", c.ID, n)
	}
	b.Membership = MembershipDecommissioned
	b.Maintenance = false
	return nil
}
