package controller

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestReassignmentCommands(t *testing.T) {
	type step struct {
		cmd  Command
		want *kerr.Error
		msg  string // a substring of Result.Msg when want is set
	}
	begin := func(p int32, replicas ...int32) BeginReassignment {
		return BeginReassignment{Topic: "t", Partition: p, Replicas: replicas}
	}
	cancel := func(p int32) CancelReassignment { return CancelReassignment{Topic: "t", Partition: p} }
	final := func(p int32, goal ...int32) MarkReassignmentFinal {
		return MarkReassignmentFinal{Topic: "t", Partition: p, Goal: goal}
	}
	complete := func(p int32, replicas ...int32) CompleteReassignment {
		return CompleteReassignment{Topic: "t", Partition: p, Replicas: replicas}
	}
	// Each case starts from brokers 1..5 and topic "t" (2 partitions: [1 2] and [2 3]).
	cases := []struct {
		name  string
		steps []step
		check func(t *testing.T, s *State)
	}{
		{name: "begin records the move", steps: []step{{begin(0, 4, 5), nil, ""}},
			check: func(t *testing.T, s *State) {
				tp, _ := s.Topic("t")
				r := tp.Reassigning[0]
				eq(t, r, Reassignment{Original: []int32{1, 2}, Target: []int32{4, 5}})
				eq(t, tp.Assignment[0], []int32{1, 2}) // unchanged until it completes
				eq(t, tp.Moved, []bool(nil))           // set once it completes
				eq(t, tp.HasMoved(0), false)
				eq(t, r.Goal(), []int32{4, 5})
				eq(t, r.Adding(), []int32{4, 5})
				eq(t, r.Removing(), []int32{1, 2})
				eq(t, tp.Replicas(0), []int32{4, 5, 1, 2})
				eq(t, tp.Replicas(1), []int32{2, 3})
				eq(t, s.Reassignments(), []PartitionReassignment{{Topic: "t", Partition: 0, Group: 1, Reassignment: r}})
				got, ok := s.Reassignment("t", 0)
				eq(t, ok, true)
				eq(t, got, r)
				eq(t, s.ReplicaLoad(), map[int32]int{1: 1, 2: 2, 3: 1, 4: 1, 5: 1})
			}},
		{name: "begin overlapping move", steps: []step{{begin(1, 3, 4), nil, ""}},
			check: func(t *testing.T, s *State) {
				tp, _ := s.Topic("t")
				r := tp.Reassigning[1]
				eq(t, r.Adding(), []int32{4})
				eq(t, r.Removing(), []int32{2})
				eq(t, tp.Replicas(1), []int32{3, 4, 2})
			}},
		{name: "begin equal to the assignment records nothing", steps: []step{{begin(0, 1, 2), nil, ""}},
			check: func(t *testing.T, s *State) {
				tp, _ := s.Topic("t")
				eq(t, len(tp.Reassigning), 0)
				eq(t, tp.Moved, []bool(nil))
			}},
		{name: "begin reordered is a leadership preference change", steps: []step{{begin(0, 2, 1), nil, ""}},
			check: func(t *testing.T, s *State) {
				r, ok := s.Reassignment("t", 0)
				eq(t, ok, true)
				eq(t, r.Adding(), []int32{})
				eq(t, r.Removing(), []int32{})
			}},
		{name: "begin unknown topic", steps: []step{{BeginReassignment{Topic: "x", Replicas: []int32{1}}, kerr.UnknownTopicOrPartition, "does not exist"}}},
		{name: "begin unknown partition", steps: []step{{begin(2, 1, 2), kerr.UnknownTopicOrPartition, "no partition 2"}}},
		{name: "begin negative partition", steps: []step{{begin(-1, 1, 2), kerr.UnknownTopicOrPartition, "no partition -1"}}},
		{name: "begin empty", steps: []step{{begin(0), kerr.InvalidReplicaAssignment, "empty"}}},
		{name: "begin duplicate", steps: []step{{begin(0, 4, 4), kerr.InvalidReplicaAssignment, "broker 4 is named twice"}}},
		{name: "begin negative broker", steps: []step{{begin(0, 4, -3), kerr.InvalidReplicaAssignment, "broker id -3 is negative"}}},
		{name: "begin unknown broker", steps: []step{{begin(0, 4, 9), kerr.InvalidReplicaAssignment, "broker 9 is not registered"}}},
		{name: "begin a dead broker is the proposer's call", steps: []step{
			{SetBrokerLiveness{ID: 5, Incarnation: 1}, nil, ""}, {begin(0, 4, 5), nil, ""}}},
		{name: "begin twice", steps: []step{{begin(0, 4, 5), nil, ""}, {begin(0, 3, 5), kerr.ReassignmentInProgress, "already being reassigned"}}},
		{name: "begin twice, even to the same target", steps: []step{{begin(0, 4, 5), nil, ""}, {begin(0, 4, 5), kerr.ReassignmentInProgress, ""}}},
		{name: "begin another partition meanwhile", steps: []step{{begin(0, 4, 5), nil, ""}, {begin(1, 4, 5), nil, ""}},
			check: func(t *testing.T, s *State) { eq(t, len(s.Reassignments()), 2) }},
		{name: "cancel", steps: []step{{begin(0, 4, 5), nil, ""}, {cancel(0), nil, ""}},
			check: func(t *testing.T, s *State) {
				tp, _ := s.Topic("t")
				r := tp.Reassigning[0]
				eq(t, r.Cancelled, true)
				eq(t, r.Goal(), []int32{1, 2})
				eq(t, r.Adding(), []int32{})
				eq(t, r.Removing(), []int32{4, 5})
				eq(t, tp.Replicas(0), []int32{1, 2, 4, 5})
			}},
		{name: "cancel twice changes nothing", steps: []step{{begin(0, 4, 5), nil, ""}, {cancel(0), nil, ""}, {cancel(0), nil, ""}}},
		{name: "cancel none in progress", steps: []step{{cancel(0), kerr.NoReassignmentInProgress, "not being reassigned"}}},
		{name: "cancel unknown topic", steps: []step{{CancelReassignment{Topic: "x"}, kerr.UnknownTopicOrPartition, ""}}},
		{name: "cancel unknown partition", steps: []step{{cancel(5), kerr.UnknownTopicOrPartition, ""}}},
		{name: "cancel once final", steps: []step{{begin(0, 4, 5), nil, ""}, {final(0, 4, 5), nil, ""},
			{cancel(0), kerr.ReassignmentInProgress, "the partition is leaving its joint configuration; cancelling is no longer safe"}}},
		{name: "final", steps: []step{{begin(0, 4, 5), nil, ""}, {final(0, 4, 5), nil, ""}, {final(0, 4, 5), nil, ""}},
			check: func(t *testing.T, s *State) { r, _ := s.Reassignment("t", 0); eq(t, r.Final, true) }},
		{name: "final without a move", steps: []step{{final(0, 4, 5), kerr.NoReassignmentInProgress, ""}}},
		{name: "final after cancel", steps: []step{{begin(0, 4, 5), nil, ""}, {cancel(0), nil, ""}, {final(0, 1, 2), kerr.ReassignmentInProgress, "cancelled"}}},
		{name: "final with a stale goal", steps: []step{{begin(0, 4, 5), nil, ""}, {final(0, 5, 4), kerr.InvalidReplicaAssignment, "goal is [4 5]"}}},
		{name: "final unknown partition", steps: []step{{final(9, 4), kerr.UnknownTopicOrPartition, ""}}},
		{name: "complete", steps: []step{{begin(0, 4, 5), nil, ""}, {final(0, 4, 5), nil, ""}, {complete(0, 4, 5), nil, ""}},
			check: func(t *testing.T, s *State) {
				tp, _ := s.Topic("t")
				eq(t, tp.Assignment[0], []int32{4, 5})
				eq(t, tp.Reassigning, map[int32]Reassignment(nil))
				eq(t, tp.Moved, []bool{true, false})
				eq(t, tp.Replicas(0), []int32{4, 5})
				eq(t, len(s.Reassignments()), 0)
			}},
		{name: "complete a cancelled move", steps: []step{{begin(0, 4, 5), nil, ""}, {cancel(0), nil, ""}, {complete(0, 1, 2), nil, ""}},
			check: func(t *testing.T, s *State) {
				tp, _ := s.Topic("t")
				eq(t, tp.Assignment[0], []int32{1, 2})
				eq(t, len(tp.Reassigning), 0)
				eq(t, tp.HasMoved(0), true) // its replicas were reconfigured once: new ones join
			}},
		{name: "complete a replication factor change", steps: []step{{begin(1, 2, 3, 4), nil, ""}, {complete(1, 2, 3, 4), nil, ""},
			{CreatePartitions{Name: "t", NewAssignment: [][]int32{{5, 1}}}, nil, ""}},
			check: func(t *testing.T, s *State) {
				tp, _ := s.Topic("t")
				eq(t, tp.Assignment, [][]int32{{1, 2}, {2, 3, 4}, {5, 1}})
				eq(t, tp.RF, int16(2)) // what new partitions get
				eq(t, tp.Moved, []bool{false, true, false})
			}},
		{name: "complete to the target after cancel", steps: []step{{begin(0, 4, 5), nil, ""}, {cancel(0), nil, ""}, {complete(0, 4, 5), kerr.InvalidReplicaAssignment, "goal is [1 2]"}}},
		{name: "complete another set", steps: []step{{begin(0, 4, 5), nil, ""}, {complete(0, 4), kerr.InvalidReplicaAssignment, "goal is [4 5]"}}},
		{name: "complete without a move", steps: []step{{complete(0, 1, 2), kerr.NoReassignmentInProgress, ""}}},
		{name: "complete unknown topic", steps: []step{{CompleteReassignment{Topic: "x", Replicas: []int32{1}}, kerr.UnknownTopicOrPartition, ""}}},
		{name: "move again after completing", steps: []step{{begin(0, 4, 5), nil, ""}, {complete(0, 4, 5), nil, ""}, {begin(0, 1, 2), nil, ""}},
			check: func(t *testing.T, s *State) {
				r, _ := s.Reassignment("t", 0)
				eq(t, r.Original, []int32{4, 5})
			}},
		{name: "delete topic drops its moves", steps: []step{{begin(0, 4, 5), nil, ""}, {DeleteTopic{Name: "t"}, nil, ""},
			{topicCmd("t", 2, []int32{1}), nil, ""}},
			check: func(t *testing.T, s *State) {
				eq(t, len(s.Reassignments()), 0)
				tp, _ := s.Topic("t")
				eq(t, tp.Moved, []bool(nil))
			}},
		{name: "create partitions while moving", steps: []step{{begin(0, 4, 5), nil, ""}, {CreatePartitions{Name: "t", NewAssignment: [][]int32{{3, 4}}}, nil, ""}},
			check: func(t *testing.T, s *State) {
				tp, _ := s.Topic("t")
				eq(t, tp.Moved, []bool(nil))
				eq(t, len(tp.Reassigning), 1)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.brokers(5)
			h.ok(topicCmd("t", 1, []int32{1, 2}, []int32{2, 3}))
			for i, st := range tc.steps {
				before, _ := h.s.Snapshot()
				res := h.apply(st.cmd)
				if res.Err != st.want {
					t.Fatalf("step %d %T: got %v (%s), want %v", i, st.cmd, res.Err, res.Msg, st.want)
				}
				after, _ := h.s.Snapshot()
				if st.want != nil {
					if !strings.Contains(res.Msg, st.msg) {
						t.Fatalf("step %d: message %q lacks %q", i, res.Msg, st.msg)
					}
					if stripApplied(t, before) != stripApplied(t, after) {
						t.Fatalf("step %d: rejected command changed the state:\n%s\n%s", i, before, after)
					}
				}
				// Every state a move passes through restores.
				if _, err := DecodeSnapshot(after); err != nil {
					t.Fatalf("step %d: %v\n%s", i, err, after)
				}
			}
			if tc.check != nil {
				tc.check(t, h.s)
			}
		})
	}
}

func TestReassignmentReadsDoNotAlias(t *testing.T) {
	h := newHarness(t)
	h.brokers(4)
	h.ok(topicCmd("t", 1, []int32{1, 2}))
	h.ok(BeginReassignment{Topic: "t", Partition: 0, Replicas: []int32{2, 1}})
	h.ok(CompleteReassignment{Topic: "t", Partition: 0, Replicas: []int32{2, 1}})
	h.ok(BeginReassignment{Topic: "t", Partition: 0, Replicas: []int32{3, 4}})
	tp, _ := h.s.Topic("t")
	r := tp.Reassigning[0]
	r.Target[0] = 99
	tp.Reassigning[0] = Reassignment{}
	tp.Moved[0] = false
	list := h.s.Reassignments()
	list[0].Original[0] = 99
	got, _ := h.s.Reassignment("t", 0)
	eq(t, got, Reassignment{Original: []int32{2, 1}, Target: []int32{3, 4}})
	again, _ := h.s.Topic("t")
	eq(t, again.Moved, []bool{true})
}

func TestSnapshotWithoutMovesDecodes(t *testing.T) {
	// A version-2 snapshot (before moves) still restores, with no moves and nothing moved.
	v2 := `{"v":2,"applied":3,"cluster_id":"c","brokers":[{"id":1,"kafka_addr":"k","rpc_addr":"r","incarnation":1,"live":true}],` +
		`"topics":[{"name":"a","id":"ab000000000000000000000000000001","rf":1,"configs":{},"assignment":[[1]],"groups":[1]}],` +
		`"cluster_config":{},"next_producer_id":0,"next_group":2}`
	s, err := DecodeSnapshot([]byte(v2))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.Topic("a")
	eq(t, a.HasMoved(0), false)
	eq(t, len(s.Reassignments()), 0)
	eq(t, a.Replicas(0), []int32{1})
}
