package controller

import (
	"errors"
	"testing"

	"github.com/cairn-io/cairn/internal/security"
)

func FuzzDecodeCommand(f *testing.F) {
	for _, c := range allCommands() {
		b, _ := EncodeCommand(c)
		f.Add(b)
	}
	f.Add([]byte(`{"v":1,"op":"create_topic","body":{"name":"t","id":"ab000000000000000000000000000001","partitions":1,"rf":1,"assignment":[[1]]}}`))
	f.Add([]byte(`{"v":1,"op":"register_broker","body":{"id":1,"kafka_addr":"k","rpc_addr":"r","incarnation":1}}`))
	f.Add([]byte(`{"v":2,"op":"begin_reassignment","body":{"topic":"t","partition":-1,"replicas":null}}`))
	f.Add([]byte(`{"v":2,"op":"begin_reassignment","body":{"topic":"t","partition":1,"replicas":[1,2]}}`))
	f.Add([]byte(`{"v":2,"op":"complete_reassignment","body":{"topic":"t","partition":0,"replicas":[2]}}`))
	f.Add([]byte(`{"v":5,"op":"upsert_scram_credential","body":{"user":"bob","credential":{"mechanism":"SCRAM-SHA-512","iterations":4096,"salt":"c2FsdA==","stored_key":"AAAA","server_key":"AAAA"}}}`))
	f.Add([]byte(`{"v":5,"op":"delete_scram_credential","body":{"user":"alice","mechanism":"SCRAM-SHA-256"}}`))
	f.Add([]byte(`{"v":6,"op":"create_acls","body":{"acls":[{"resource_type":2,"resource_name":"t","pattern_type":3,"principal":"User:a","host":"*","operation":3,"permission":3}]}}`))
	f.Add([]byte(`{"v":6,"op":"delete_acls","body":{"filters":[{"resource_type":1,"resource_name":"t","pattern_type":2,"operation":1,"permission":1}]}}`))
	f.Add([]byte(`{"v":6,"op":"delete_acls","body":{"filters":[{}]}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCommand(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("unclassified error %v", err)
			}
		} else {
			// What decodes re-encodes to a fixed point.
			enc, err := EncodeCommand(c)
			if err != nil {
				t.Fatal(err)
			}
			c2, err := DecodeCommand(enc)
			if err != nil {
				t.Fatalf("re-decoding %s: %v", enc, err)
			}
			enc2, _ := EncodeCommand(c2)
			if string(enc) != string(enc2) {
				t.Fatalf("not a fixed point:\n%s\n%s", enc, enc2)
			}
		}
		// Applying anything to a populated state never panics, and keeps it snapshot-able.
		s := fuzzState(t)
		idx := s.AppliedIndex() + 1
		if _, err := s.Apply(idx, b); err == nil || errors.Is(err, ErrMalformed) {
			if s.AppliedIndex() != idx {
				t.Fatalf("applied index %d, want %d", s.AppliedIndex(), idx)
			}
		}
		snap, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeSnapshot(snap); err != nil {
			t.Fatalf("state after applying %q no longer restores: %v", b, err)
		}
	})
}

func fuzzState(t *testing.T) *State {
	s := New()
	cmds := []Command{
		SetClusterID{ClusterID: "c"},
		RegisterBroker{ID: 1, KafkaAddr: "k1", RPCAddr: "r1", Incarnation: 1},
		RegisterBroker{ID: 2, KafkaAddr: "k2", RPCAddr: "r2", Rack: "a", Incarnation: 1},
		CreateTopic{Name: "t", ID: TopicID{0xab, 15: 1}, Partitions: 2, RF: 1, Assignment: [][]int32{{1}, {2}}},
		BeginReassignment{Topic: "t", Partition: 0, Replicas: []int32{2}},
		UpsertScramCredential{User: "alice", Credential: testCredential(security.ScramSHA256, 1)},
		CreateACLs{ACLs: []security.ACL{testACL("t", "User:alice")}},
	}
	for i, c := range cmds {
		b, _ := EncodeCommand(c)
		if res, err := s.Apply(uint64(i+1), b); err != nil || res.Err != nil {
			t.Fatalf("%T: %v %v", c, err, res.Err)
		}
	}
	return s
}

func FuzzDecodeSnapshot(f *testing.F) {
	h := richState(f)
	good, _ := h.s.Snapshot()
	f.Add(good)
	empty, _ := New().Snapshot()
	f.Add(empty)
	f.Add([]byte(`{"v":1,"applied":3,"cluster_id":"c","brokers":[{"id":1,"kafka_addr":"k","rpc_addr":"r","incarnation":1,"live":true}],"topics":[{"name":"t","id":"ab000000000000000000000000000001","rf":1,"configs":{},"assignment":[[1]]}],"cluster_config":{},"next_producer_id":0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSnapshot(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		// A decoded snapshot is a fixed point and serves every read.
		enc, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		s2, err := DecodeSnapshot(enc)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", enc, err)
		}
		enc2, _ := s2.Snapshot()
		if string(enc) != string(enc2) {
			t.Fatalf("not a fixed point:\n%s\n%s", enc, enc2)
		}
		for _, tp := range s.Topics() {
			for p := range tp.Partitions() {
				if _, ok := s.Assignment(tp.Name, p); !ok {
					t.Fatalf("%s-%d has no assignment", tp.Name, p)
				}
			}
			if _, ok := s.TopicByID(tp.ID); !ok {
				t.Fatalf("%s not found by id", tp.Name)
			}
		}
		_ = s.LiveBrokers()
		_ = s.ReplicaLoad()
		for _, u := range s.Users() {
			for _, c := range u.Credentials {
				if _, ok := s.ScramCredential(u.Name, c.Mechanism); !ok {
					t.Fatalf("user %q %s listed but not found", u.Name, c.Mechanism)
				}
			}
		}
		for _, a := range s.ACLs() {
			if err := security.ValidateACL(a); err != nil {
				t.Fatalf("restored an invalid ACL: %v", err)
			}
		}
		// It goes on applying.
		cmd, _ := EncodeCommand(AllocateProducerIDBlock{Broker: 1, Size: 1})
		_, _ = s.Apply(s.AppliedIndex()+1, cmd)
	})
}
