package controller

import (
	"cmp"
	"fmt"
	"slices"
)

// ReplaceReplica chooses the replica set partition replicas moves to when leaving gives up
// its replica: the other replicas keep their order (so a leaving preferred leader hands
// that role to the next replica) and one broker of candidates joins at the end. The new
// broker is, in order of preference: of a rack the remaining replicas do not span yet
// (placement's racks: a broker without a rack is a rack of its own), then the least
// loaded (load, which the caller updates as it plans), then the lowest id. The choice must
// still span need declared racks (the topic's min.insync.racks; RackShortfalls); rackOf
// gives every broker's declared rack. On failure it returns nil and the reason, for an
// operator.
func ReplaceReplica(candidates []BrokerInfo, rackOf map[int32]string, load map[int32]int, replicas []int32, leaving int32, need int) ([]int32, string) {
	kept := minus(replicas, []int32{leaving})
	spanned := map[rackKey]bool{}
	for _, id := range kept {
		spanned[keyOf(BrokerInfo{ID: id, Rack: rackOf[id]})] = true
	}
	best := -1
	for i, c := range candidates {
		if c.ID == leaving || slices.Contains(kept, c.ID) {
			continue
		}
		if best < 0 || cmp.Or(
			boolCmp(spanned[keyOf(c)], spanned[keyOf(candidates[best])]),
			cmp.Compare(load[c.ID], load[candidates[best].ID]),
			cmp.Compare(c.ID, candidates[best].ID)) < 0 {
			best = i
		}
	}
	if best < 0 {
		return nil, fmt.Sprintf("no live, active broker outside its replicas %v can take the replica of broker %d", replicas, leaving)
	}
	out := append(slices.Clone(kept), candidates[best].ID)
	if short := RackShortfalls(rackOf, [][]int32{out}, 0, need); len(short) > 0 {
		return nil, fmt.Sprintf("min.insync.racks=%d cannot be met without broker %d: the best choice %v spans %d declared racks", need, leaving, out, short[0].Declared)
	}
	return out, ""
}

// DecommissionMove is one partition move a decommission plans.
type DecommissionMove struct {
	Topic     string
	Partition int32
	Replicas  []int32 // the target
}

// DecommissionPlan is what moving every replica off a broker needs now.
type DecommissionPlan struct {
	// Moves are the partitions that hold a replica on the broker and no move yet, each
	// with its target, by topic then partition.
	Moves []DecommissionMove
	// Moving are the partitions already moving off the broker.
	Moving int
	// Blocked are the partitions that could not be placed, "topic/p: reason".
	Blocked []string
}

// PlanDecommission plans moving every replica off broker id over candidates (the live,
// active brokers; id among them is ignored). needRacks gives a topic's effective
// min.insync.racks. A partition that moves towards a set that still holds id (an
// operator's move) is blocked until that move ends. load is updated with each planned
// replica, so that the replicas spread.
func (s *State) PlanDecommission(id int32, candidates []BrokerInfo, load map[int32]int, needRacks func(Topic) int) DecommissionPlan {
	rackOf := map[int32]string{}
	for _, b := range s.Brokers() {
		rackOf[b.ID] = b.Rack
	}
	var plan DecommissionPlan
	for _, t := range s.Topics() {
		for p := range t.Partitions() {
			if r, moving := t.Reassigning[p]; moving {
				switch {
				case slices.Contains(r.Removing(), id):
					plan.Moving++
				case slices.Contains(r.Goal(), id):
					plan.Blocked = append(plan.Blocked, fmt.Sprintf("%s/%d: a move towards %v, which keeps broker %d, is in progress", t.Name, p, r.Goal(), id))
				}
				continue
			}
			if !slices.Contains(t.Assignment[p], id) {
				continue
			}
			target, why := ReplaceReplica(candidates, rackOf, load, t.Assignment[p], id, needRacks(t))
			if target == nil {
				plan.Blocked = append(plan.Blocked, fmt.Sprintf("%s/%d: %s", t.Name, p, why))
				continue
			}
			load[target[len(target)-1]]++
			plan.Moves = append(plan.Moves, DecommissionMove{Topic: t.Name, Partition: p, Replicas: target})
		}
	}
	return plan
}
