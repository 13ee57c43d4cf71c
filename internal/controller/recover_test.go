package controller

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestForceRecoverPartition(t *testing.T) {
	fr := func(p int32, base int32, dead ...int32) *ForceRecoverPartition {
		return &ForceRecoverPartition{Topic: "t", Partition: p, Dead: dead, Base: base}
	}
	down := func(id int32) SetBrokerLiveness { return SetBrokerLiveness{ID: id, Incarnation: 1, Live: false} }
	// Brokers 1..5; topic "t": partition 0 on [1 2 3], partition 1 on [3 4 5].
	cases := []struct {
		name  string
		down  []int32
		cmd   *ForceRecoverPartition
		want  *kerr.Error
		msg   string
		check func(t *testing.T, s *State)
	}{
		{name: "two of three gone: rebuilt from the survivor", down: []int32{2, 3}, cmd: fr(0, 1, 2, 3),
			check: func(t *testing.T, s *State) {
				tp, _ := s.Topic("t")
				eq(t, tp.Assignment[0], []int32{1})
				eq(t, tp.Groups, []uint64{3, 2}) // a new group id: the old group's messages reach nothing
				eq(t, tp.Recovered, map[int32]Recovery{0: {FromGroup: 1, Base: 1}})
				eq(t, tp.HasMoved(0), true)
				eq(t, tp.Reassigning, map[int32]Reassignment(nil)) // one survivor: nothing to move
				eq(t, s.NextGroup(), uint64(4))
			}},
		{name: "during a move, survivors of the target rejoin from the base", down: []int32{4, 5},
			cmd: fr(1, 3, 4, 5), check: func(t *testing.T, s *State) {
				tp, _ := s.Topic("t")
				eq(t, tp.Assignment[1], []int32{3})
				eq(t, tp.Reassigning[1], Reassignment{Original: []int32{3}, Target: []int32{3, 1}})
			}},
		{name: "a live dead replica is refused", down: []int32{2}, cmd: fr(0, 1, 2, 3), want: kerr.InvalidRequest, msg: "broker 3 is alive"},
		{name: "a majority left is refused", down: []int32{2}, cmd: fr(0, 1, 2), want: kerr.InvalidRequest, msg: "keeps a majority"},
		{name: "a dead broker that holds no replica", down: []int32{2, 5}, cmd: fr(0, 1, 2, 5), want: kerr.InvalidRequest, msg: "holds no replica"},
		{name: "the base among the dead", down: []int32{2, 3}, cmd: fr(0, 2, 2, 3), want: kerr.InvalidRequest, msg: "not a surviving replica"},
		{name: "a base that is no replica", down: []int32{2, 3}, cmd: fr(0, 4, 2, 3), want: kerr.InvalidRequest, msg: "not a surviving replica"},
		{name: "no dead named", cmd: fr(0, 1), want: kerr.InvalidRequest, msg: "name the dead"},
		{name: "a broker named twice", down: []int32{2}, cmd: fr(0, 1, 2, 2), want: kerr.InvalidRequest, msg: "named twice"},
		{name: "unknown partition", cmd: fr(7, 1, 2), want: kerr.UnknownTopicOrPartition, msg: "no partition 7"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.brokers(5)
			h.ok(topicCmd("t", 1, []int32{1, 2, 3}, []int32{3, 4, 5}))
			if strings.HasPrefix(tc.name, "during a move") {
				h.ok(BeginReassignment{Topic: "t", Partition: 1, Replicas: []int32{1, 4, 5}})
			}
			for _, id := range tc.down {
				h.ok(down(id))
			}
			before, _ := h.s.Snapshot()
			if code, msg := h.s.CheckForceRecover(*tc.cmd); code != tc.want {
				t.Fatalf("check: %v (%s), want %v", code, msg, tc.want)
			}
			res := h.apply(tc.cmd)
			if res.Err != tc.want {
				t.Fatalf("got %v (%s), want %v", res.Err, res.Msg, tc.want)
			}
			after, _ := h.s.Snapshot()
			if tc.want != nil {
				if !strings.Contains(res.Msg, tc.msg) {
					t.Fatalf("message %q lacks %q", res.Msg, tc.msg)
				}
				if stripApplied(t, before) != stripApplied(t, after) {
					t.Fatalf("a refused recovery changed the state:\n%s\n%s", before, after)
				}
			}
			if _, err := DecodeSnapshot(after); err != nil {
				t.Fatalf("%v\n%s", err, after)
			}
			if tc.check != nil {
				tc.check(t, h.s)
			}
		})
	}
}

func TestMajorityLost(t *testing.T) {
	h := newHarness(t)
	h.brokers(5)
	h.ok(topicCmd("t", 1, []int32{1, 2, 3}, []int32{3, 4, 5}, []int32{4, 3, 1}))
	got := h.s.MajorityLost([]int32{3, 4})
	eq(t, got, []LostMajority{
		{Topic: "t", Partition: 1, Group: 2, Replicas: []int32{3, 4, 5}, Dead: []int32{3, 4}, Survivors: []int32{5}},
		{Topic: "t", Partition: 2, Group: 3, Replicas: []int32{4, 3, 1}, Dead: []int32{4, 3}, Survivors: []int32{1}},
	})
	eq(t, len(h.s.MajorityLost([]int32{2})), 0)
}
