package controller

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// refused applies c, expects code with a message containing want, and checks nothing
// changed.
func (h *harness) refused(c Command, code *kerr.Error, want string) {
	h.t.Helper()
	before, _ := h.s.Snapshot()
	res := h.apply(c)
	if res.Err != code || !strings.Contains(res.Msg, want) {
		h.t.Fatalf("%T: got %v %q, want %v %q", c, res.Err, res.Msg, code, want)
	}
	after, _ := h.s.Snapshot()
	if stripApplied(h.t.(*testing.T), after) != stripApplied(h.t.(*testing.T), before) {
		h.t.Fatalf("%T: a refused command changed the state", c)
	}
}

func membership(t *testing.T, s *State, id int32) string {
	b, _ := s.Broker(id)
	return b.MembershipStatus()
}

func TestDecommissionLifecycle(t *testing.T) {
	h := newHarness(t)
	h.brokers(4)
	h.ok(topicCmd("orders", 1, []int32{1, 2, 3}, []int32{2, 3, 4}))
	h.ok(DecommissionBroker{ID: 1})
	eq(t, membership(t, h.s, 1), MembershipDraining)

	// New partitions are not placed on it.
	live, _ := h.s.Placement()
	for _, b := range live {
		if b.ID == 1 {
			t.Fatal("a draining broker is offered to placement")
		}
	}
	// A restart keeps the mark; so does a snapshot.
	h.ok(RegisterBroker{ID: 1, KafkaAddr: addr("k", 1), RPCAddr: addr("r", 1), Incarnation: 2})
	eq(t, membership(t, h.s, 1), MembershipDraining)
	snap, _ := h.s.Snapshot()
	restored, err := DecodeSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, membership(t, restored, 1), MembershipDraining)

	// Not finished while it holds a replica.
	h.refused(MarkBrokerDecommissioned{ID: 1}, kerr.InvalidRequest, "still holds 1 replicas")
	h.ok(BeginReassignment{Topic: "orders", Partition: 0, Replicas: []int32{2, 3, 4}})
	h.refused(MarkBrokerDecommissioned{ID: 1}, kerr.InvalidRequest, "still holds 1 replicas")
	h.ok(CompleteReassignment{Topic: "orders", Partition: 0, Replicas: []int32{2, 3, 4}})
	h.ok(MarkBrokerDecommissioned{ID: 1})
	eq(t, membership(t, h.s, 1), MembershipDecommissioned)

	h.refused(RecommissionBroker{ID: 1}, kerr.InvalidRequest, "already decommissioned")
	h.refused(DecommissionBroker{ID: 1}, kerr.InvalidRequest, "already decommissioned")
}

func TestDecommissionRefused(t *testing.T) {
	h := newHarness(t)
	h.brokers(3)
	h.ok(topicCmd("orders", 1, []int32{1, 2, 3}))
	h.refused(DecommissionBroker{ID: 9}, kerr.BrokerIDNotRegistered, "broker 9 is not registered")
	h.refused(DecommissionBroker{ID: 1}, kerr.InvalidReplicaAssignment, "partition orders-0 has 3 replicas but only 2 other active brokers")
	h.refused(RecommissionBroker{ID: 9}, kerr.BrokerIDNotRegistered, "not registered")
	h.refused(RecommissionBroker{ID: 1}, kerr.InvalidRequest, "not being decommissioned")
	h.refused(MarkBrokerDecommissioned{ID: 1}, kerr.InvalidRequest, "is active, not draining")

	h.ok(DeleteTopic{Name: "orders"})
	h.ok(DecommissionBroker{ID: 1})
	h.refused(DecommissionBroker{ID: 1}, kerr.InvalidRequest, "already being decommissioned")
	h.ok(DecommissionBroker{ID: 2})
	h.refused(DecommissionBroker{ID: 3}, kerr.InvalidRequest, "broker 3 is the last active broker")
}

func TestRecommissionCancelsMovesOffIt(t *testing.T) {
	h := newHarness(t)
	h.brokers(5)
	h.ok(topicCmd("orders", 1, []int32{1, 2, 3}, []int32{1, 3, 4}, []int32{2, 3, 4}))
	h.ok(DecommissionBroker{ID: 1})
	h.ok(BeginReassignment{Topic: "orders", Partition: 0, Replicas: []int32{2, 3, 5}})
	h.ok(BeginReassignment{Topic: "orders", Partition: 1, Replicas: []int32{3, 4, 5}})
	h.ok(MarkReassignmentFinal{Topic: "orders", Partition: 1, Goal: []int32{3, 4, 5}})
	h.ok(BeginReassignment{Topic: "orders", Partition: 2, Replicas: []int32{2, 3, 5}}) // not off broker 1
	h.ok(RecommissionBroker{ID: 1})
	eq(t, membership(t, h.s, 1), MembershipActive)
	r0, _ := h.s.Reassignment("orders", 0)
	r1, _ := h.s.Reassignment("orders", 1)
	r2, _ := h.s.Reassignment("orders", 2)
	eq(t, r0.Cancelled, true)  // back to [1 2 3]
	eq(t, r1.Cancelled, false) // past its cancel point: it completes
	eq(t, r2.Cancelled, false) // an operator's move that does not touch broker 1
}

func TestReplaceReplicaRackAware(t *testing.T) {
	racks := map[int32]string{1: "a", 2: "b", 3: "c", 4: "a", 5: "c", 6: "d"}
	var cands []BrokerInfo
	for id := int32(2); id <= 6; id++ {
		cands = append(cands, BrokerInfo{ID: id, Rack: racks[id]})
	}
	load := map[int32]int{4: 0, 5: 0, 6: 9}
	// Replicas 1(a) 2(b) 3(c): rack a is left uncovered by 2 and 3; broker 4 (a) and 6 (d)
	// both add a rack, 4 is less loaded.
	got, why := ReplaceReplica(cands, racks, load, []int32{1, 2, 3}, 1, 3)
	if !slices.Equal(got, []int32{2, 3, 4}) {
		t.Fatalf("got %v (%s)", got, why)
	}
	// Without broker 4, rack d beats the less loaded broker 5 of a rack already spanned.
	got, _ = ReplaceReplica(slices.DeleteFunc(slices.Clone(cands), func(b BrokerInfo) bool { return b.ID == 4 }), racks, load, []int32{1, 2, 3}, 1, 3)
	eq(t, got, []int32{2, 3, 6})
	// Only a broker of a spanned rack is left: min.insync.racks=3 refuses it, 2 takes it.
	only5 := []BrokerInfo{{ID: 2, Rack: "b"}, {ID: 3, Rack: "c"}, {ID: 5, Rack: "c"}}
	got, why = ReplaceReplica(only5, racks, load, []int32{1, 2, 3}, 1, 3)
	if got != nil || !strings.Contains(why, "min.insync.racks=3") {
		t.Fatalf("got %v %q, want a min.insync.racks refusal", got, why)
	}
	got, _ = ReplaceReplica(only5, racks, load, []int32{1, 2, 3}, 1, 2)
	eq(t, got, []int32{2, 3, 5})
	// Nobody outside the replicas: the reason says so.
	got, why = ReplaceReplica([]BrokerInfo{{ID: 2}, {ID: 3}}, racks, load, []int32{1, 2, 3}, 1, 1)
	if got != nil || !strings.Contains(why, "no live, active broker") {
		t.Fatalf("got %v %q", got, why)
	}
}

func TestPlanDecommissionSpreadsAndReports(t *testing.T) {
	h := newHarness(t)
	h.brokers(5)
	h.ok(topicCmd("orders", 1, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{2, 3, 4}))
	h.ok(topicCmd("solo", 2, []int32{1}))
	h.ok(BeginReassignment{Topic: "solo", Partition: 0, Replicas: []int32{1, 5}}) // keeps 1
	live := []BrokerInfo{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5}}
	plan := h.s.PlanDecommission(1, live, h.s.ReplicaLoad(), func(Topic) int { return 1 })
	if len(plan.Moves) != 2 || len(plan.Blocked) != 1 || !strings.HasPrefix(plan.Blocked[0], "solo/0: a move towards [1 5]") {
		t.Fatalf("plan %+v", plan)
	}
	// The two replicas spread over the brokers outside their partition.
	a, b := plan.Moves[0].Replicas[2], plan.Moves[1].Replicas[2]
	if a == b {
		t.Fatalf("both replicas went to broker %d: %+v", a, plan.Moves)
	}
}

// New replicas, by a move or a new partition, never land on a draining broker.
func TestNewReplicasOnDrainingBrokerRefused(t *testing.T) {
	h := newHarness(t)
	h.brokers(4)
	h.ok(topicCmd("orders", 1, []int32{1, 2}))
	h.ok(DecommissionBroker{ID: 4})
	h.refused(BeginReassignment{Topic: "orders", Partition: 0, Replicas: []int32{1, 4}}, kerr.InvalidReplicaAssignment, "broker 4 is draining and takes no new replica")
	h.refused(topicCmd("more", 2, []int32{4, 1}), kerr.InvalidReplicaAssignment, "broker 4, which is draining and takes no new replica")
	h.refused(CreatePartitions{Name: "orders", NewAssignment: [][]int32{{2, 4}}}, kerr.InvalidReplicaAssignment, "broker 4, which is draining")
	h.ok(CreatePartitions{Name: "orders", NewAssignment: [][]int32{{2, 3}}})
}
