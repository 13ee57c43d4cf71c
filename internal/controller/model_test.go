package controller

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"pgregory.net/rapid"
)

// genCommand draws a command over a small universe of brokers, topics and configs, so that
// both accepted and rejected commands are common.
func genCommand(t *rapid.T) Command {
	// Mostly brokers 0..3 (which placements name), sometimes unknown or negative ones.
	brokerID := rapid.Custom(func(t *rapid.T) int32 { return 3 - rapid.Int32Range(-2, 4).Draw(t, "broker id") })
	topic := rapid.SampledFrom([]string{"a", "b", "c.d", "c_d", "a", "b", ""})
	topicID := rapid.Custom(func(t *rapid.T) TopicID { return TopicID{byte(4 - rapid.IntRange(0, 4).Draw(t, "id"))} })
	// Replica lists are mostly well formed, over brokers that are often registered.
	replicasOf := func(label string, rf int) []int32 {
		if rapid.IntRange(0, 9).Draw(t, label+" sloppy") == 0 {
			return rapid.SliceOfN(rapid.Int32Range(0, 5), 0, 4).Draw(t, label)
		}
		return rapid.SliceOfNDistinct(rapid.Int32Range(0, 3), rf, rf, rapid.ID[int32]).Draw(t, label)
	}
	rf := rapid.IntRange(1, 3).Draw(t, "rf")
	replicas := rapid.Custom(func(t *rapid.T) []int32 { return replicasOf("replicas", rf) })
	assignment := rapid.Custom(func(t *rapid.T) [][]int32 {
		out := make([][]int32, rapid.IntRange(1, 3).Draw(t, "partitions")-rapid.IntRange(0, 1).Draw(t, "none"))
		for i := range out {
			out[i] = replicasOf(fmt.Sprintf("partition %d", i), rf)
		}
		return out
	})
	configs := rapid.MapOfN(rapid.SampledFrom([]string{"", "x", "y"}), rapid.SampledFrom([]string{"1", "2"}), 0, 2)
	keys := rapid.SliceOfN(rapid.SampledFrom([]string{"", "x", "y"}), 0, 2)
	partition := rapid.Int32Range(-1, 3)
	op := rapid.IntRange(0, 15).Draw(t, "op")
	if op >= 14 {
		op = 1 // more registrations
	}
	switch op {
	case 0:
		return SetClusterID{ClusterID: rapid.SampledFrom([]string{"", "c1", "c2"}).Draw(t, "cluster id")}
	case 1:
		id := brokerID.Draw(t, "broker")
		host := int(id)
		if rapid.IntRange(0, 4).Draw(t, "other host") == 0 {
			host = rapid.IntRange(0, 6).Draw(t, "host")
		}
		return RegisterBroker{ID: id, KafkaAddr: fmt.Sprintf("k%d", host), RPCAddr: fmt.Sprintf("r%d", host),
			Rack: rapid.SampledFrom([]string{"", "r1", "r2"}).Draw(t, "rack"), Incarnation: rapid.Uint64Range(0, 3).Draw(t, "incarnation")}
	case 2:
		return SetBrokerLiveness{ID: brokerID.Draw(t, "broker"), Incarnation: rapid.Uint64Range(0, 3).Draw(t, "incarnation"), Live: rapid.Bool().Draw(t, "live")}
	case 3:
		a := assignment.Draw(t, "assignment")
		return CreateTopic{Name: topic.Draw(t, "topic"), ID: topicID.Draw(t, "id"), Partitions: int32(len(a)), RF: int16(rf),
			Configs: configs.Draw(t, "configs"), Assignment: a}
	case 4:
		return DeleteTopic{Name: topic.Draw(t, "topic"), ID: topicID.Draw(t, "id")}
	case 5:
		return CreatePartitions{Name: topic.Draw(t, "topic"), NewAssignment: assignment.Draw(t, "assignment")}
	case 6:
		return SetTopicConfig{Name: topic.Draw(t, "topic"), Overrides: configs.Draw(t, "set"), Delete: keys.Draw(t, "delete"), Replace: rapid.Bool().Draw(t, "replace"),
			IfUnchanged: rapid.Bool().Draw(t, "if unchanged"), Expect: configs.Draw(t, "expect")}
	case 7:
		return SetClusterConfig{Overrides: configs.Draw(t, "set"), Delete: keys.Draw(t, "delete"), Replace: rapid.Bool().Draw(t, "replace"),
			IfUnchanged: rapid.Bool().Draw(t, "if unchanged"), Expect: configs.Draw(t, "expect")}
	case 8:
		return AllocateProducerIDBlock{Broker: brokerID.Draw(t, "broker"), Size: rapid.Int32Range(-1, 100).Draw(t, "size")}
	case 9:
		// Any size: a move may change the replication factor.
		target := replicasOf("target", rapid.IntRange(1, 3).Draw(t, "target rf"))
		return BeginReassignment{Topic: topic.Draw(t, "topic"), Partition: partition.Draw(t, "partition"), Replicas: target}
	case 10:
		return CancelReassignment{Topic: topic.Draw(t, "topic"), Partition: partition.Draw(t, "partition")}
	case 11:
		return MarkReassignmentFinal{Topic: topic.Draw(t, "topic"), Partition: partition.Draw(t, "partition"), Goal: replicas.Draw(t, "goal")}
	case 12:
		return SetBrokerMaintenance{ID: brokerID.Draw(t, "broker"), On: rapid.Bool().Draw(t, "on")}
	default:
		return CompleteReassignment{Topic: topic.Draw(t, "topic"), Partition: partition.Draw(t, "partition"), Replicas: replicas.Draw(t, "replicas")}
	}
}

// TestApplyDeterministicAndRestorable applies random command sequences to two replicas,
// one of which restarts from a snapshot taken midway. A move's proposer-side check agrees
// with its apply. After every command the replicas'
// snapshots are identical, a rejected command changes nothing but the applied index, the
// state's invariants hold (its snapshot decodes), and re-applying the index is a no-op.
func TestApplyDeterministicAndRestorable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := New(), New()
		// Mostly start from a cluster with an id and brokers 0..3, so that topics get made.
		var prefix []Command
		if rapid.IntRange(0, 9).Draw(t, "no bootstrap") < 9 {
			prefix = append(prefix, SetClusterID{ClusterID: "c1"})
			for id, rack := range []string{"r1", "r2", "", "r1"} {
				prefix = append(prefix, RegisterBroker{ID: int32(id), KafkaAddr: fmt.Sprintf("k%d", id), RPCAddr: fmt.Sprintf("r%d", id), Rack: rack, Incarnation: 1})
			}
		}
		n := len(prefix) + rapid.IntRange(1, 80).Draw(t, "commands")
		restartAt := rapid.IntRange(0, n).Draw(t, "restart at")
		var index uint64
		for i := range n {
			if i == restartAt {
				snap, err := b.Snapshot()
				if err != nil {
					t.Fatal(err)
				}
				b = New()
				if err := b.Restore(snap); err != nil {
					t.Fatalf("restoring %s: %v", snap, err)
				}
			}
			var cmd Command
			if i < len(prefix) {
				cmd = prefix[i]
			} else {
				cmd = genCommand(t)
			}
			payload, err := EncodeCommand(cmd)
			if err != nil {
				t.Fatal(err)
			}
			index += uint64(rapid.IntRange(1, 3).Draw(t, "gap"))
			before, _ := a.Snapshot()
			var checked *kerr.Error
			begin, isBegin := cmd.(BeginReassignment)
			if isBegin {
				checked, _ = a.CheckBeginReassignment(begin)
			}
			ra, errA := a.Apply(index, payload)
			if isBegin && a.ClusterID() != "" && checked != ra.Err {
				t.Fatalf("%#v: the proposer's check says %v, apply %v", cmd, checked, ra.Err)
			}
			rb, errB := b.Apply(index, payload)
			if errA != nil || errB != nil {
				t.Fatalf("%#v: %v, %v", cmd, errA, errB)
			}
			if ra.Err != rb.Err || ra.Msg != rb.Msg || fmt.Sprint(ra.ProducerIDs) != fmt.Sprint(rb.ProducerIDs) {
				t.Fatalf("%#v: replicas disagree: %+v vs %+v", cmd, ra, rb)
			}
			sa, _ := a.Snapshot()
			sb, _ := b.Snapshot()
			if string(sa) != string(sb) {
				t.Fatalf("%#v: snapshots differ:\n%s\n%s", cmd, sa, sb)
			}
			if _, err := DecodeSnapshot(sa); err != nil {
				t.Fatalf("%#v broke an invariant: %v\n%s", cmd, err, sa)
			}
			if ra.Err != nil {
				s, _ := DecodeSnapshot(before)
				s.applied = index
				want, _ := s.Snapshot()
				if string(want) != string(sa) {
					t.Fatalf("rejected %#v (%v) changed the state", cmd, ra.Err)
				}
			}
			again, _ := a.Apply(index, payload)
			if !again.Skipped {
				t.Fatalf("re-applying index %d was not skipped", index)
			}
			if s2, _ := a.Snapshot(); string(s2) != string(sa) {
				t.Fatal("re-applying changed the state")
			}
		}
	})
}
