package controller

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// harness applies commands at rising indexes.
type harness struct {
	t     testing.TB
	s     *State
	index uint64
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	h := &harness{t: t, s: New()}
	h.ok(SetClusterID{ClusterID: "cairn-test"})
	return h
}

func (h *harness) apply(c Command) Result {
	h.t.Helper()
	b, err := EncodeCommand(c)
	if err != nil {
		h.t.Fatalf("encoding %T: %v", c, err)
	}
	h.index++
	res, err := h.s.Apply(h.index, b)
	if err != nil {
		h.t.Fatalf("applying %T: %v", c, err)
	}
	return res
}

func (h *harness) ok(c Command) Result {
	h.t.Helper()
	res := h.apply(c)
	if res.Err != nil {
		h.t.Fatalf("%T: %v: %s", c, res.Err, res.Msg)
	}
	return res
}

// brokers registers brokers 1..n, racks cycling through racks (none if empty).
func (h *harness) brokers(n int, racks ...string) {
	h.t.Helper()
	for i := 1; i <= n; i++ {
		rack := ""
		if len(racks) > 0 {
			rack = racks[(i-1)%len(racks)]
		}
		h.ok(RegisterBroker{ID: int32(i), KafkaAddr: addr("k", i), RPCAddr: addr("r", i), Rack: rack, Incarnation: 1})
	}
}

func addr(kind string, i int) string { return kind + "-host-" + string(rune('a'+i)) + ":1" }

func tid(b byte) TopicID { return TopicID{b, 1, 2, 3} }

func topicCmd(name string, id byte, assignment ...[]int32) CreateTopic {
	rf := 0
	if len(assignment) > 0 {
		rf = len(assignment[0])
	}
	return CreateTopic{Name: name, ID: tid(id), Partitions: int32(len(assignment)), RF: int16(rf), Assignment: assignment}
}

func TestCommands(t *testing.T) {
	type step struct {
		cmd  Command
		want *kerr.Error
		msg  string // a substring of Result.Msg when want is set
	}
	// Each case starts from a cluster with id set, brokers 1..3 registered and topic "t"
	// (id 1, 2 partitions, RF 2).
	cases := []struct {
		name  string
		steps []step
		check func(t *testing.T, s *State)
	}{
		{name: "set cluster id twice", steps: []step{{SetClusterID{ClusterID: "x"}, kerr.InconsistentClusterID, "already"}},
			check: func(t *testing.T, s *State) { eq(t, s.ClusterID(), "cairn-test") }},
		{name: "register new broker", steps: []step{{RegisterBroker{ID: 7, KafkaAddr: "k7:9092", RPCAddr: "r7:9093", Rack: "z", Incarnation: 1}, nil, ""}},
			check: func(t *testing.T, s *State) {
				b, ok := s.Broker(7)
				eq(t, ok, true)
				eq(t, b, Broker{ID: 7, KafkaAddr: "k7:9092", RPCAddr: "r7:9093", Rack: "z", Incarnation: 1, Live: true})
			}},
		{name: "re-register with newer incarnation updates and revives", steps: []step{
			{SetBrokerLiveness{ID: 2, Incarnation: 1, Live: false}, nil, ""},
			{RegisterBroker{ID: 2, KafkaAddr: "new:1", RPCAddr: "new:2", Rack: "q", Incarnation: 5}, nil, ""}},
			check: func(t *testing.T, s *State) {
				b, _ := s.Broker(2)
				eq(t, b, Broker{ID: 2, KafkaAddr: "new:1", RPCAddr: "new:2", Rack: "q", Incarnation: 5, Live: true})
			}},
		{name: "re-register with same incarnation", steps: []step{{RegisterBroker{ID: 2, KafkaAddr: "a:1", RPCAddr: "a:2", Incarnation: 1}, kerr.DuplicateBrokerRegistration, "not newer"}}},
		{name: "register negative id", steps: []step{{RegisterBroker{ID: -1, KafkaAddr: "a:1", RPCAddr: "a:2"}, kerr.InvalidRequest, "negative"}}},
		{name: "register without address", steps: []step{{RegisterBroker{ID: 9, RPCAddr: "a:2"}, kerr.InvalidRequest, "address"}}},
		{name: "register on a live broker's address", steps: []step{{RegisterBroker{ID: 9, KafkaAddr: "x:1", RPCAddr: addr("r", 1), Incarnation: 1}, kerr.DuplicateBrokerRegistration, "already uses"}}},
		{name: "register on a dead broker's address", steps: []step{
			{SetBrokerLiveness{ID: 1, Incarnation: 1}, nil, ""},
			{RegisterBroker{ID: 9, KafkaAddr: addr("k", 1), RPCAddr: addr("r", 1), Incarnation: 1}, nil, ""}}},
		{name: "revive on an address taken over", steps: []step{
			{SetBrokerLiveness{ID: 1, Incarnation: 1}, nil, ""},
			{RegisterBroker{ID: 9, KafkaAddr: addr("k", 1), RPCAddr: "other:1", Incarnation: 1}, nil, ""},
			{SetBrokerLiveness{ID: 1, Incarnation: 1, Live: true}, kerr.DuplicateBrokerRegistration, "broker 9"}}},
		{name: "conflict names the lowest live broker", steps: []step{
			{RegisterBroker{ID: 9, KafkaAddr: addr("k", 3), RPCAddr: addr("r", 2), Incarnation: 1}, kerr.DuplicateBrokerRegistration, "live broker 2 "}}},
		{name: "create colliding topic name", steps: []step{
			{topicCmd("a.b", 2, []int32{1}), nil, ""},
			{topicCmd("a_b", 3, []int32{1}), kerr.InvalidTopicException, "collides with existing topic \"a.b\""}}},
		{name: "liveness down and up", steps: []step{{SetBrokerLiveness{ID: 3, Incarnation: 1, Live: false}, nil, ""}},
			check: func(t *testing.T, s *State) {
				eq(t, len(s.Brokers()), 3)
				eq(t, ids(s.LiveBrokers()), []int32{1, 2})
			}},
		{name: "liveness of unknown broker", steps: []step{{SetBrokerLiveness{ID: 42, Incarnation: 1}, kerr.BrokerIDNotRegistered, "not registered"}}},
		{name: "liveness of stale incarnation", steps: []step{{SetBrokerLiveness{ID: 1, Incarnation: 0}, kerr.StaleBrokerEpoch, "incarnation"}},
			check: func(t *testing.T, s *State) { eq(t, len(s.LiveBrokers()), 3) }},
		{name: "create topic", steps: []step{{CreateTopic{Name: "u", ID: tid(2), Partitions: 3, RF: 3, Configs: map[string]string{"retention.ms": "1"},
			Assignment: [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}}, nil, ""}},
			check: func(t *testing.T, s *State) {
				tp, ok := s.Topic("u")
				eq(t, ok, true)
				eq(t, tp.Partitions(), int32(3))
				eq(t, tp.RF, int16(3))
				eq(t, tp.Configs, map[string]string{"retention.ms": "1"})
				r, _ := s.Assignment("u", 1)
				eq(t, r, []int32{2, 3, 1})
				byID, ok := s.TopicByID(tid(2))
				eq(t, ok && byID.Name == "u", true)
			}},
		{name: "create duplicate topic", steps: []step{{topicCmd("t", 9, []int32{1}), kerr.TopicAlreadyExists, "already exists"}}},
		{name: "create duplicate topic id", steps: []step{{topicCmd("u", 1, []int32{1}), kerr.TopicAlreadyExists, "topic id"}}},
		{name: "create zero topic id", steps: []step{{CreateTopic{Name: "u", Partitions: 1, RF: 1, Assignment: [][]int32{{1}}}, kerr.InvalidRequest, "zero"}}},
		{name: "create bad name", steps: []step{{topicCmd("a/b", 2, []int32{1}), kerr.InvalidTopicException, "characters"}}},
		{name: "create dot name", steps: []step{{topicCmd("..", 2, []int32{1}), kerr.InvalidTopicException, "not allowed"}}},
		{name: "create long name", steps: []step{{topicCmd(strings.Repeat("x", 250), 2, []int32{1}), kerr.InvalidTopicException, "249"}}},
		{name: "create empty name", steps: []step{{topicCmd("", 2, []int32{1}), kerr.InvalidTopicException, "empty"}}},
		{name: "create zero partitions", steps: []step{{CreateTopic{Name: "u", ID: tid(2), RF: 1}, kerr.InvalidPartitions, "at least 1"}}},
		{name: "create zero rf", steps: []step{{CreateTopic{Name: "u", ID: tid(2), Partitions: 1, Assignment: [][]int32{{}}}, kerr.InvalidReplicationFactor, "at least 1"}}},
		{name: "create count mismatch", steps: []step{{CreateTopic{Name: "u", ID: tid(2), Partitions: 2, RF: 1, Assignment: [][]int32{{1}}}, kerr.InvalidReplicaAssignment, "replica lists"}}},
		{name: "create unknown broker", steps: []step{{topicCmd("u", 2, []int32{1, 4}), kerr.InvalidReplicaAssignment, "not registered"}}},
		{name: "create duplicate replica", steps: []step{{topicCmd("u", 2, []int32{1, 1}), kerr.InvalidReplicaAssignment, "twice"}}},
		{name: "create short replica list", steps: []step{{topicCmd("u", 2, []int32{1, 2}, []int32{3}), kerr.InvalidReplicaAssignment, "replication factor"}}},
		{name: "create empty config name", steps: []step{{CreateTopic{Name: "u", ID: tid(2), Partitions: 1, RF: 1, Assignment: [][]int32{{1}}, Configs: map[string]string{"": "x"}}, kerr.InvalidConfig, "empty"}}},
		{name: "create on a dead broker is the proposer's call", steps: []step{
			{SetBrokerLiveness{ID: 3, Incarnation: 1}, nil, ""},
			{topicCmd("u", 2, []int32{3}), nil, ""}}},
		{name: "delete topic", steps: []step{{DeleteTopic{Name: "t"}, nil, ""}},
			check: func(t *testing.T, s *State) {
				_, ok := s.Topic("t")
				eq(t, ok, false)
				_, ok = s.TopicByID(tid(1))
				eq(t, ok, false)
			}},
		{name: "delete then recreate with a new id", steps: []step{{DeleteTopic{Name: "t", ID: tid(1)}, nil, ""}, {topicCmd("t", 2, []int32{1}), nil, ""}},
			check: func(t *testing.T, s *State) { tp, _ := s.Topic("t"); eq(t, tp.ID, tid(2)) }},
		{name: "delete unknown topic", steps: []step{{DeleteTopic{Name: "nope"}, kerr.UnknownTopicOrPartition, "does not exist"}}},
		{name: "delete with wrong id", steps: []step{{DeleteTopic{Name: "t", ID: tid(5)}, kerr.UnknownTopicID, "has id"}}},
		{name: "create partitions", steps: []step{{CreatePartitions{Name: "t", NewAssignment: [][]int32{{3, 1}, {1, 3}}}, nil, ""}},
			check: func(t *testing.T, s *State) {
				tp, _ := s.Topic("t")
				eq(t, tp.Assignment, [][]int32{{1, 2}, {2, 3}, {3, 1}, {1, 3}})
			}},
		{name: "create partitions unknown topic", steps: []step{{CreatePartitions{Name: "x", NewAssignment: [][]int32{{1, 2}}}, kerr.UnknownTopicOrPartition, ""}}},
		{name: "create no partitions", steps: []step{{CreatePartitions{Name: "t"}, kerr.InvalidPartitions, "no partitions"}}},
		{name: "create partitions wrong rf", steps: []step{{CreatePartitions{Name: "t", NewAssignment: [][]int32{{1, 2}, {1}}}, kerr.InvalidReplicaAssignment, "partition 3"}},
			check: func(t *testing.T, s *State) { tp, _ := s.Topic("t"); eq(t, tp.Partitions(), int32(2)) }},
		{name: "create partitions unknown broker", steps: []step{{CreatePartitions{Name: "t", NewAssignment: [][]int32{{1, 8}}}, kerr.InvalidReplicaAssignment, "not registered"}}},
		{name: "topic config incremental", steps: []step{
			{SetTopicConfig{Name: "t", Overrides: map[string]string{"a": "1", "b": "2"}}, nil, ""},
			{SetTopicConfig{Name: "t", Overrides: map[string]string{"c": "3"}, Delete: []string{"a", "zz"}}, nil, ""}},
			check: func(t *testing.T, s *State) {
				c, _ := s.TopicConfig("t")
				eq(t, c, map[string]string{"b": "2", "c": "3"})
			}},
		{name: "topic config replace", steps: []step{
			{SetTopicConfig{Name: "t", Overrides: map[string]string{"a": "1", "b": "2"}}, nil, ""},
			{SetTopicConfig{Name: "t", Overrides: map[string]string{"c": "3"}, Replace: true}, nil, ""}},
			check: func(t *testing.T, s *State) { c, _ := s.TopicConfig("t"); eq(t, c, map[string]string{"c": "3"}) }},
		{name: "topic config unknown topic", steps: []step{{SetTopicConfig{Name: "x", Overrides: map[string]string{"a": "1"}}, kerr.UnknownTopicOrPartition, ""}}},
		{name: "topic config empty name", steps: []step{{SetTopicConfig{Name: "t", Delete: []string{""}}, kerr.InvalidConfig, "empty"}}},
		{name: "cluster config", steps: []step{
			{SetClusterConfig{Overrides: map[string]string{"a": "1", "b": "2"}}, nil, ""},
			{SetClusterConfig{Delete: []string{"a"}}, nil, ""}},
			check: func(t *testing.T, s *State) { eq(t, s.ClusterConfig(), map[string]string{"b": "2"}) }},
		{name: "cluster config replace", steps: []step{
			{SetClusterConfig{Overrides: map[string]string{"a": "1"}}, nil, ""},
			{SetClusterConfig{Replace: true}, nil, ""}},
			check: func(t *testing.T, s *State) { eq(t, s.ClusterConfig(), map[string]string{}) }},
		{name: "topic config if unchanged", steps: []step{
			{SetTopicConfig{Name: "t", Overrides: map[string]string{"a": "1"}, Replace: true, IfUnchanged: true}, nil, ""},
			{SetTopicConfig{Name: "t", Overrides: map[string]string{"a": "1", "b": "2"}, Replace: true, IfUnchanged: true, Expect: map[string]string{"a": "1"}}, nil, ""}},
			check: func(t *testing.T, s *State) {
				c, _ := s.TopicConfig("t")
				eq(t, c, map[string]string{"a": "1", "b": "2"})
			}},
		{name: "topic config built from a stale view", steps: []step{
			{SetTopicConfig{Name: "t", Overrides: map[string]string{"a": "1"}}, nil, ""},
			{SetTopicConfig{Name: "t", Overrides: map[string]string{"b": "2"}, Replace: true, IfUnchanged: true}, ErrConfigChanged, "changed since"}}},
		{name: "cluster config built from a stale view", steps: []step{
			{SetClusterConfig{Overrides: map[string]string{"super.users": "User:admin"}, Replace: true, IfUnchanged: true}, nil, ""},
			// built from a replica that had not yet applied the line above
			{SetClusterConfig{Overrides: map[string]string{"authorizer.class.name": "x"}, Replace: true, IfUnchanged: true}, ErrConfigChanged, "changed since"},
			{SetClusterConfig{Overrides: map[string]string{"super.users": "User:admin", "authorizer.class.name": "x"}, Replace: true,
				IfUnchanged: true, Expect: map[string]string{"super.users": "User:admin"}}, nil, ""}},
			check: func(t *testing.T, s *State) {
				eq(t, s.ClusterConfig(), map[string]string{"super.users": "User:admin", "authorizer.class.name": "x"})
			}},
		{name: "cluster config empty name", steps: []step{{SetClusterConfig{Overrides: map[string]string{"": "1"}}, kerr.InvalidConfig, "empty"}}},
		{name: "producer id blocks", steps: []step{{AllocateProducerIDBlock{Broker: 1, Size: 1000}, nil, ""}, {AllocateProducerIDBlock{Broker: 2, Size: 10}, nil, ""}},
			check: func(t *testing.T, s *State) { eq(t, s.NextProducerID(), int64(1010)) }},
		{name: "producer id block unknown broker", steps: []step{{AllocateProducerIDBlock{Broker: 9, Size: 10}, kerr.BrokerIDNotRegistered, ""}}},
		{name: "producer id block zero size", steps: []step{{AllocateProducerIDBlock{Broker: 1}, kerr.InvalidRequest, "size"}}},
		{name: "producer id block too large", steps: []step{{AllocateProducerIDBlock{Broker: 1, Size: MaxProducerIDBlock + 1}, kerr.InvalidRequest, "size"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.brokers(3)
			h.ok(topicCmd("t", 1, []int32{1, 2}, []int32{2, 3}))
			for i, st := range tc.steps {
				before, _ := h.s.Snapshot()
				res := h.apply(st.cmd)
				if res.Err != st.want {
					t.Fatalf("step %d %T: got %v (%s), want %v", i, st.cmd, res.Err, res.Msg, st.want)
				}
				if st.want != nil {
					if !strings.Contains(res.Msg, st.msg) {
						t.Fatalf("step %d: message %q lacks %q", i, res.Msg, st.msg)
					}
					// A rejected command changes nothing but the applied index.
					after, _ := h.s.Snapshot()
					if stripApplied(t, before) != stripApplied(t, after) {
						t.Fatalf("step %d: rejected command changed the state:\n%s\n%s", i, before, after)
					}
				}
			}
			if tc.check != nil {
				tc.check(t, h.s)
			}
		})
	}
}

func stripApplied(t *testing.T, snap []byte) string {
	t.Helper()
	s, err := DecodeSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	s.applied = 0
	b, _ := s.Snapshot()
	return string(b)
}

func TestProducerIDBlockResult(t *testing.T) {
	h := newHarness(t)
	h.brokers(2)
	r1 := h.ok(AllocateProducerIDBlock{Broker: 1, Size: 100})
	r2 := h.ok(AllocateProducerIDBlock{Broker: 2, Size: 5})
	eq(t, *r1.ProducerIDs, ProducerIDBlock{Broker: 1, First: 0, Size: 100})
	eq(t, *r2.ProducerIDs, ProducerIDBlock{Broker: 2, First: 100, Size: 5})
}

func TestClusterIDMustComeFirst(t *testing.T) {
	s := New()
	b, _ := EncodeCommand(RegisterBroker{ID: 1, KafkaAddr: "a:1", RPCAddr: "a:2"})
	res, err := s.Apply(1, b)
	if err != nil || res.Err != kerr.InvalidRequest || !strings.Contains(res.Msg, "first") {
		t.Fatalf("got %+v, %v", res, err)
	}
	b, _ = EncodeCommand(SetClusterID{})
	if res, _ := s.Apply(2, b); res.Err != kerr.InvalidRequest {
		t.Fatalf("empty cluster id: %+v", res)
	}
	b, _ = EncodeCommand(SetClusterID{ClusterID: "c"})
	if res, _ := s.Apply(3, b); res.Err != nil {
		t.Fatalf("got %+v", res)
	}
	eq(t, s.ClusterID(), "c")
}

func TestApplyIdempotentByIndex(t *testing.T) {
	h := newHarness(t)
	h.brokers(2)
	alloc, _ := EncodeCommand(AllocateProducerIDBlock{Broker: 1, Size: 10})
	res, err := h.s.Apply(10, alloc)
	if err != nil || res.Err != nil || res.ProducerIDs.First != 0 {
		t.Fatalf("got %+v, %v", res, err)
	}
	snap, _ := h.s.Snapshot()
	// Re-applying index 10, or any index below it, is a no-op, whatever the payload.
	for _, idx := range []uint64{10, 9, 1} {
		res, err := h.s.Apply(idx, alloc)
		if err != nil || !res.Skipped || res.ProducerIDs != nil {
			t.Fatalf("index %d: got %+v, %v", idx, res, err)
		}
		res, err = h.s.Apply(idx, []byte("garbage"))
		if err != nil || !res.Skipped {
			t.Fatalf("garbage at index %d: got %+v, %v", idx, res, err)
		}
	}
	again, _ := h.s.Snapshot()
	eq(t, string(again), string(snap))
	eq(t, h.s.AppliedIndex(), uint64(10))
	// Gaps are fine: Raft's own entries carry no command.
	res, _ = h.s.Apply(15, alloc)
	eq(t, res.ProducerIDs.First, int64(10))
	eq(t, h.s.AppliedIndex(), uint64(15))
}

func TestApplyMalformedAndUnsupported(t *testing.T) {
	h := newHarness(t)
	res, err := h.s.Apply(5, []byte(`{"v":1,"op":"nope","body":{}}`))
	if !errors.Is(err, ErrMalformed) || res.Err != kerr.InvalidRequest {
		t.Fatalf("got %+v, %v", res, err)
	}
	eq(t, h.s.AppliedIndex(), uint64(5)) // consumed, as on every replica
	res, err = h.s.Apply(6, []byte(`{"v":99,"op":"set_cluster_id","body":{}}`))
	if !errors.Is(err, ErrUnsupportedVersion) || res.Err != kerr.UnsupportedVersion {
		t.Fatalf("got %+v, %v", res, err)
	}
	eq(t, h.s.AppliedIndex(), uint64(5)) // not consumed: this replica must stop
}

func TestReadsDoNotAlias(t *testing.T) {
	h := newHarness(t)
	h.brokers(3)
	h.ok(CreateTopic{Name: "t", ID: tid(1), Partitions: 1, RF: 2, Configs: map[string]string{"a": "1"}, Assignment: [][]int32{{1, 2}}})
	h.ok(SetClusterConfig{Overrides: map[string]string{"x": "1"}})

	tp, _ := h.s.Topic("t")
	tp.Assignment[0][0] = 99
	tp.Configs["a"] = "changed"
	all := h.s.Topics()
	all[0].Assignment[0][1] = 99
	all[0].Configs["new"] = "x"
	r, _ := h.s.Assignment("t", 0)
	r[0] = 99
	c, _ := h.s.TopicConfig("t")
	c["a"] = "changed"
	cc := h.s.ClusterConfig()
	cc["x"] = "changed"
	bs := h.s.Brokers()
	bs[0].Rack = "changed"

	tp, _ = h.s.Topic("t")
	eq(t, tp.Assignment, [][]int32{{1, 2}})
	eq(t, tp.Configs, map[string]string{"a": "1"})
	eq(t, h.s.ClusterConfig(), map[string]string{"x": "1"})
	b, _ := h.s.Broker(1)
	eq(t, b.Rack, "")

	// Nor does Apply keep the command's slices and maps.
	cmd := &CreateTopic{Name: "u", ID: tid(2), Partitions: 1, RF: 1, Configs: map[string]string{"k": "v"}, Assignment: [][]int32{{3}}}
	h.ok(cmd)
	cmd.Assignment[0][0] = 1
	cmd.Configs["k"] = "changed"
	tp, _ = h.s.Topic("u")
	eq(t, tp.Assignment, [][]int32{{3}})
	eq(t, tp.Configs, map[string]string{"k": "v"})
}

func TestReplicaLoad(t *testing.T) {
	h := newHarness(t)
	h.brokers(4)
	h.ok(topicCmd("a", 1, []int32{1, 2}, []int32{2, 3}))
	h.ok(topicCmd("b", 2, []int32{2}))
	eq(t, h.s.ReplicaLoad(), map[int32]int{1: 1, 2: 3, 3: 1, 4: 0})
}

func TestPlacementInput(t *testing.T) {
	h := newHarness(t)
	h.brokers(3, "a", "b")
	h.ok(SetBrokerLiveness{ID: 2, Incarnation: 1})
	h.ok(topicCmd("t", 1, []int32{2, 3}))
	brokers, load := h.s.Placement()
	eq(t, brokers, []BrokerInfo{{ID: 1, Rack: "a"}, {ID: 3, Rack: "a"}})
	eq(t, load, map[int32]int{1: 0, 2: 1, 3: 1})
}

func TestInternalTopic(t *testing.T) {
	eq(t, Topic{Name: "__consumer_offsets"}.Internal(), true)
	eq(t, Topic{Name: "_x"}.Internal(), false)
}

func TestConcurrentReadsDuringApply(t *testing.T) {
	h := newHarness(t)
	h.brokers(3)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, tp := range h.s.Topics() {
					_ = tp.Partitions()
				}
				_ = h.s.LiveBrokers()
				_, _ = h.s.Snapshot()
			}
		}()
	}
	for i := range 200 {
		name := "t" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		h.ok(topicCmd(name, byte(i+1), []int32{1, 2}))
		h.ok(CreatePartitions{Name: name, NewAssignment: [][]int32{{2, 3}}})
		h.ok(SetTopicConfig{Name: name, Overrides: map[string]string{"k": "v"}})
	}
	close(stop)
	wg.Wait()
	eq(t, len(h.s.Topics()), 200)
}

func ids(bs []Broker) []int32 {
	out := make([]int32, len(bs))
	for i, b := range bs {
		out[i] = b.ID
	}
	return out
}

func eq[T any](t *testing.T, got, want T) {
	t.Helper()
	if !deepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}
