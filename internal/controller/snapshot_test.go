package controller

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cairn-io/cairn/internal/security"
)

func richState(t testing.TB) *harness {
	t.Helper()
	h := newHarness(t)
	h.brokers(5, "a", "b", "")
	h.ok(SetBrokerLiveness{ID: 4, Incarnation: 1, Live: false})
	h.ok(CreateTopic{Name: "orders", ID: tid(1), Partitions: 3, RF: 2, Configs: map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"},
		Assignment: [][]int32{{1, 2}, {2, 3}, {3, 1}}})
	h.ok(topicCmd("logs", 2, []int32{5}))
	h.ok(topicCmd("my.topic", 3, []int32{1}))
	h.ok(CreatePartitions{Name: "logs", NewAssignment: [][]int32{{4}}})
	h.ok(SetClusterConfig{Overrides: map[string]string{"write_caching_default": "true"}})
	h.ok(AllocateProducerIDBlock{Broker: 2, Size: 1000})
	h.ok(BeginReassignment{Topic: "orders", Partition: 0, Replicas: []int32{5, 1}})
	h.ok(CompleteReassignment{Topic: "orders", Partition: 0, Replicas: []int32{5, 1}})
	// A replication factor change, done, and a move still under way.
	h.ok(BeginReassignment{Topic: "orders", Partition: 1, Replicas: []int32{2, 3, 5}})
	h.ok(CompleteReassignment{Topic: "orders", Partition: 1, Replicas: []int32{2, 3, 5}})
	h.ok(BeginReassignment{Topic: "orders", Partition: 2, Replicas: []int32{4, 5}})
	h.ok(MarkReassignmentFinal{Topic: "orders", Partition: 2, Goal: []int32{4, 5}})
	h.ok(UpsertScramCredential{User: "alice", Credential: testCredential(security.ScramSHA256, 1)})
	h.ok(UpsertScramCredential{User: "alice", Credential: testCredential(security.ScramSHA512, 2)})
	h.ok(UpsertScramCredential{User: "bob", Credential: testCredential(security.ScramSHA512, 3)})
	h.ok(CreateACLs{ACLs: []security.ACL{testACL("orders", "User:alice"), testACL("payments", "User:bob")}})
	return h
}

func TestSnapshotRoundTrip(t *testing.T) {
	h := richState(t)
	snap, err := h.s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeSnapshot(snap)
	if err != nil {
		t.Fatalf("%v\n%s", err, snap)
	}
	again, _ := got.Snapshot()
	eq(t, string(again), string(snap))
	eq(t, got.AppliedIndex(), h.s.AppliedIndex())
	eq(t, got.ClusterID(), h.s.ClusterID())
	eq(t, got.Brokers(), h.s.Brokers())
	eq(t, got.LiveBrokers(), h.s.LiveBrokers())
	eq(t, got.Topics(), h.s.Topics())
	eq(t, got.ClusterConfig(), h.s.ClusterConfig())
	eq(t, got.NextProducerID(), h.s.NextProducerID())
	eq(t, got.ReplicaLoad(), h.s.ReplicaLoad())
	eq(t, got.topicIDs, h.s.topicIDs)
	eq(t, got.Users(), h.s.Users())
	eq(t, got.ACLs(), h.s.ACLs())

	// The restored state goes on exactly as the original: same results, same bytes.
	r := New()
	if err := r.Restore(snap); err != nil {
		t.Fatal(err)
	}
	next := mustEncode(t, AllocateProducerIDBlock{Broker: 1, Size: 7})
	idx := h.s.AppliedIndex()
	r1, _ := h.s.Apply(idx+1, next)
	r2, _ := r.Apply(idx+1, next)
	eq(t, r1, r2)
	// An index the snapshot covers is skipped by the restored state.
	r3, _ := r.Apply(idx, next)
	eq(t, r3.Skipped, true)
	s1, _ := h.s.Snapshot()
	s2, _ := r.Snapshot()
	eq(t, string(s1), string(s2))
}

func TestSnapshotEmptyState(t *testing.T) {
	snap, _ := New().Snapshot()
	s, err := DecodeSnapshot(snap)
	if err != nil {
		t.Fatalf("%v: %s", err, snap)
	}
	again, _ := s.Snapshot()
	eq(t, string(again), string(snap))
}

func TestRestoreRefusesCorruptSnapshot(t *testing.T) {
	h := richState(t)
	good, _ := h.s.Snapshot()
	cur := fmt.Sprintf(`"v":%d`, SnapshotVersion)
	corrupt := func(old, new string) string {
		if !strings.Contains(string(good), old) {
			t.Fatalf("snapshot lacks %q: %s", old, good)
		}
		return strings.Replace(string(good), old, new, 1)
	}
	cases := map[string]struct {
		in   string
		want error
	}{
		"garbage":              {"{", ErrMalformed},
		"future version":       {corrupt(cur, `"v":9`), ErrUnsupportedVersion},
		"v2 with moves":        {corrupt(cur, `"v":2`), ErrMalformed},
		"move off assignment":  {corrupt(`"original":[3,1]`, `"original":[1,3]`), ErrMalformed},
		"move unknown target":  {corrupt(`"target":[4,5]`, `"target":[4,9]`), ErrMalformed},
		"move to itself":       {corrupt(`"target":[4,5]`, `"target":[3,1]`), ErrMalformed},
		"move empty target":    {corrupt(`"target":[4,5]`, `"target":[]`), ErrMalformed},
		"move cancelled final": {corrupt(`"final":true`, `"cancelled":true,"final":true`), ErrMalformed},
		"move unknown part":    {corrupt(`"reassigning":{"2":`, `"reassigning":{"7":`), ErrMalformed},
		"moved flags short":    {corrupt(`"moved":[true,true,false]`, `"moved":[true,true]`), ErrMalformed},
		"unmoved rf change":    {corrupt(`"assignment":[[5],[4]]`, `"assignment":[[5,1],[4]]`), ErrMalformed},
		"group ids short":      {corrupt(`"groups":[1,2,3]`, `"groups":[1,2]`), ErrMalformed},
		"group id zero":        {corrupt(`"groups":[1,2,3]`, `"groups":[0,2,3]`), ErrMalformed},
		"group id twice":       {corrupt(`"groups":[1,2,3]`, `"groups":[1,2,2]`), ErrMalformed},
		"group id unissued":    {corrupt(`"groups":[1,2,3]`, `"groups":[1,2,99]`), ErrMalformed},
		"no next group":        {corrupt(`,"next_group":7`, ``), ErrMalformed},
		"v1 with group ids":    {corrupt(cur, `"v":1`), ErrMalformed},
		"unknown broker":       {corrupt(`"assignment":[[5,1]`, `"assignment":[[6,1]`), ErrMalformed},
		"duplicate replica":    {corrupt(`"assignment":[[5,1]`, `"assignment":[[1,1]`), ErrMalformed},
		"moved empty replicas": {corrupt(`"assignment":[[5,1]`, `"assignment":[[]`), ErrMalformed},
		"duplicate broker":     {corrupt(`{"id":2,`, `{"id":1,`), ErrMalformed},
		"negative broker":      {corrupt(`{"id":2,`, `{"id":-2,`), ErrMalformed},
		"duplicate topic":      {corrupt(`"name":"orders"`, `"name":"logs"`), ErrMalformed},
		"colliding topics":     {corrupt(`"name":"orders"`, `"name":"my_topic"`), ErrMalformed},
		"colliding live addr":  {corrupt(`"kafka_addr":"`+addr("k", 2)+`"`, `"kafka_addr":"`+addr("k", 1)+`"`), ErrMalformed},
		"no address":           {corrupt(`"rpc_addr":"`+addr("r", 2)+`"`, `"rpc_addr":""`), ErrMalformed},
		"bad topic name":       {corrupt(`"name":"orders"`, `"name":"or/ders"`), ErrMalformed},
		"duplicate topic id":   {corrupt(tid(2).String(), tid(1).String()), ErrMalformed},
		"zero topic id":        {corrupt(tid(2).String(), TopicID{}.String()), ErrMalformed},
		"zero rf":              {corrupt(`"rf":1`, `"rf":0`), ErrMalformed},
		"no partitions":        {corrupt(`"assignment":[[5],[4]]`, `"assignment":[]`), ErrMalformed},
		"negative pid":         {corrupt(`"next_producer_id":1000`, `"next_producer_id":-1`), ErrMalformed},
		"no cluster id":        {corrupt(`"cluster_id":"cairn-test"`, `"cluster_id":""`), ErrMalformed},
		"empty config name":    {corrupt(`"write_caching_default"`, `""`), ErrMalformed},
		"unknown field":        {corrupt(`"applied":`, `"x":1,"applied":`), ErrMalformed},
		"empty topic config":   {corrupt(`"retention.ms"`, `""`), ErrMalformed},
		"trailing data":        {string(good) + "[]", ErrMalformed},
		"null":                 {"null", ErrMalformed},
		"v5 with users":        {corrupt(cur, `"v":5`), ErrMalformed},
		"v6 with ACLs":         {corrupt(cur, `"v":6`), ErrMalformed},
		"ACL twice":            {corrupt(aclJSON("payments", "User:bob"), aclJSON("orders", "User:alice")), ErrMalformed},
		"ACL bad principal":    {corrupt(`"principal":"User:bob"`, `"principal":"bob"`), ErrMalformed},
		"ACL unknown op":       {corrupt(`"operation":"READ"`, `"operation":"FLY"`), ErrMalformed},
		"user twice":           {corrupt(`"name":"bob"`, `"name":"alice"`), ErrMalformed},
		"empty user name":      {corrupt(`"name":"bob"`, `"name":""`), ErrMalformed},
		"user without creds":   {corrupt(`{"name":"bob","credentials":[`+credJSON(security.ScramSHA512, 3)+`]}`, `{"name":"bob","credentials":[]}`), ErrMalformed},
		"two creds one mech":   {corrupt(`"mechanism":"SCRAM-SHA-256"`, `"mechanism":"SCRAM-SHA-512"`), ErrMalformed},
		"unknown mechanism":    {corrupt(`"mechanism":"SCRAM-SHA-256"`, `"mechanism":"SCRAM-SHA-1"`), ErrMalformed},
		"too few iterations":   {corrupt(`"iterations":4096`, `"iterations":1`), ErrMalformed},
		"empty salt":           {corrupt(`"salt":"AQEBAQ=="`, `"salt":""`), ErrMalformed},
		"short stored key":     {corrupt(`"stored_key":"`, `"stored_key":"AAAA`), ErrMalformed},
		"topics not an array":  {corrupt(`"topics":[`, `"topics":{"a":`), ErrMalformed},
	}
	for name, tc := range cases {
		s := New()
		err := s.Restore([]byte(tc.in))
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", name, err, tc.want)
			continue
		}
		if s.AppliedIndex() != 0 || s.ClusterID() != "" {
			t.Errorf("%s: a refused restore changed the state", name)
		}
	}
	// A state that refuses a restore keeps what it had.
	before, _ := h.s.Snapshot()
	if err := h.s.Restore([]byte("{}")); err == nil {
		t.Fatal("restored {}")
	}
	after, _ := h.s.Snapshot()
	eq(t, string(after), string(before))
}

func TestGroupIDs(t *testing.T) {
	h := richState(t)
	// orders took 1-3, logs 4, my.topic 5, the partition added to logs 6.
	for _, tc := range []struct {
		group     uint64
		topic     string
		partition int32
	}{{1, "orders", 0}, {3, "orders", 2}, {4, "logs", 0}, {5, "my.topic", 0}, {6, "logs", 1}} {
		topic, p, ok := h.s.PartitionByGroup(tc.group)
		if !ok || topic != tc.topic || p != tc.partition {
			t.Errorf("group %d: %q %d %v, want %q %d", tc.group, topic, p, ok, tc.topic, tc.partition)
		}
	}
	if _, _, ok := h.s.PartitionByGroup(0); ok {
		t.Error("group 0 is the controller's, not a partition's")
	}
	eq(t, h.s.NextGroup(), uint64(7))
	logs, _ := h.s.Topic("logs")
	eq(t, logs.Groups, []uint64{4, 6})

	// A deleted topic's group ids are never handed out again.
	h.ok(DeleteTopic{Name: "logs"})
	if _, _, ok := h.s.PartitionByGroup(4); ok {
		t.Error("group 4 still maps to the deleted topic")
	}
	h.ok(topicCmd("fresh", 9, []int32{1}))
	fresh, _ := h.s.Topic("fresh")
	eq(t, fresh.Groups, []uint64{7})

	// The ids survive a snapshot.
	snap, _ := h.s.Snapshot()
	r, err := DecodeSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, r.NextGroup(), uint64(8))
	topic, p, ok := r.PartitionByGroup(7)
	if !ok || topic != "fresh" || p != 0 {
		t.Fatalf("restored group 7: %q %d %v", topic, p, ok)
	}
}

func TestSnapshotVersion1GetsGroupIDs(t *testing.T) {
	v1 := `{"v":1,"applied":3,"cluster_id":"c","brokers":[{"id":1,"kafka_addr":"k","rpc_addr":"r","incarnation":1,"live":true}],` +
		`"topics":[{"name":"a","id":"ab000000000000000000000000000001","rf":1,"configs":{},"assignment":[[1],[1]]},` +
		`{"name":"b","id":"ab000000000000000000000000000002","rf":1,"configs":{},"assignment":[[1]]}],"cluster_config":{},"next_producer_id":0}`
	s, err := DecodeSnapshot([]byte(v1))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.Topic("a")
	b, _ := s.Topic("b")
	eq(t, a.Groups, []uint64{1, 2})
	eq(t, b.Groups, []uint64{3})
	eq(t, s.NextGroup(), uint64(4))
}
