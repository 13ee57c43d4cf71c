package broker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/controller"
)

// moveCluster is a one-broker cluster in rack r0 that knows of brokers 7 (rack r1) and 8
// (rack r2), which never run: a move is recorded, listed and cancelled without them. It
// holds topic t, one partition on the running broker.
func moveCluster(t *testing.T) *Broker {
	t.Helper()
	b := openInRack(t, "r0")
	if _, err := b.CreateTopic("t", 1, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	for id, rack := range map[int32]string{7: "r1", 8: "r2"} {
		if _, err := b.propose(controller.RegisterBroker{ID: id, KafkaAddr: "k" + rack + ":1", RPCAddr: "r" + rack + ":1", Rack: rack, Incarnation: 1}); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func TestAlterPartitionReassignmentRefusesBadInput(t *testing.T) {
	b := moveCluster(t)
	self := b.NodeID()
	for _, tc := range []struct {
		name      string
		topic     string
		partition int32
		replicas  []int32
		want      *kerr.Error
		msg       string
	}{
		{"unknown topic", "nope", 0, []int32{7}, kerr.UnknownTopicOrPartition, `topic "nope" does not exist`},
		{"unknown partition", "t", 1, []int32{7}, kerr.UnknownTopicOrPartition, "no partition 1"},
		{"negative partition", "t", -1, []int32{7}, kerr.UnknownTopicOrPartition, "no partition -1"},
		{"empty", "t", 0, []int32{}, kerr.InvalidReplicaAssignment, "empty"},
		{"duplicate", "t", 0, []int32{7, 8, 7}, kerr.InvalidReplicaAssignment, "broker 7 is named twice"},
		{"negative broker", "t", 0, []int32{7, -1}, kerr.InvalidReplicaAssignment, "broker id -1 is negative"},
		{"unknown broker", "t", 0, []int32{7, 42}, kerr.InvalidReplicaAssignment, "broker 42 is not registered"},
		{"cancel none in progress", "t", 0, nil, kerr.NoReassignmentInProgress, "not being reassigned"},
		{"cancel unknown topic", "nope", 0, nil, kerr.UnknownTopicOrPartition, "does not exist"},
	} {
		err := b.AlterPartitionReassignment(tc.topic, tc.partition, tc.replicas)
		if err == nil || err.Code != tc.want || !strings.Contains(err.Msg, tc.msg) {
			t.Errorf("%s: got %v, want %s with %q", tc.name, err, tc.want.Message, tc.msg)
		}
	}
	if got := b.PartitionReassignments(nil); len(got) != 0 {
		t.Fatalf("refused requests recorded moves: %v", got)
	}
	if a, _ := b.state().Assignment("t", 0); !slices.Equal(a, []int32{self}) {
		t.Fatalf("refused requests changed the assignment: %v", a)
	}
	// The current assignment again is accepted and records nothing, as in Kafka.
	if err := b.AlterPartitionReassignment("t", 0, []int32{self}); err != nil {
		t.Fatalf("no-op move: %v", err)
	}
	if got := b.PartitionReassignments(nil); len(got) != 0 {
		t.Fatalf("a no-op move was recorded: %v", got)
	}
}

func TestPartitionMoveRecordListCancel(t *testing.T) {
	b := moveCluster(t)
	self := b.NodeID()
	if err := b.AlterPartitionReassignment("t", 0, []int32{7, 8}); err != nil {
		t.Fatal(err)
	}
	want := ReassignmentInfo{Topic: "t", Partition: 0, Original: []int32{self}, Target: []int32{7, 8},
		Adding: []int32{7, 8}, Removing: []int32{self}, Replicas: []int32{7, 8, self}}
	got := b.PartitionReassignments(nil)
	if len(got) != 1 || !equalInfo(got[0], want) {
		t.Fatalf("listed %+v, want %+v", got, want)
	}
	for name, filter := range map[string]map[string][]int32{"topic": {"t": nil}, "partition": {"t": {0}}} {
		if got := b.PartitionReassignments(filter); len(got) != 1 {
			t.Errorf("filter by %s: %v", name, got)
		}
	}
	for name, filter := range map[string]map[string][]int32{"other partition": {"t": {3}}, "other topic": {"u": nil}, "none": {}} {
		if got := b.PartitionReassignments(filter); len(got) != 0 {
			t.Errorf("filter %s: %v", name, got)
		}
	}
	// Metadata lists every replica the partition may have while it moves: target first.
	tp, _ := b.topic("t")
	if v := b.PartitionView(*tp, 0); !slices.Equal(v.Replicas, []int32{7, 8, self}) {
		t.Fatalf("partition view replicas %v", v.Replicas)
	}

	// A second move of the same partition is refused and changes nothing.
	err := b.AlterPartitionReassignment("t", 0, []int32{8})
	if err == nil || err.Code != kerr.ReassignmentInProgress {
		t.Fatalf("second move: %v", err)
	}
	if got := b.PartitionReassignments(nil); len(got) != 1 || !slices.Equal(got[0].Target, []int32{7, 8}) {
		t.Fatalf("a refused second move changed the record: %v", got)
	}

	// Cancel goes back to the original replicas; cancelling again is accepted while the
	// cancelled move is still listed. The driver may take it to its end between the two
	// (no learner ever caught up), and then there is no move left to cancel.
	if err := b.AlterPartitionReassignment("t", 0, nil); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if err := b.AlterPartitionReassignment("t", 0, nil); err != nil &&
		(err.Code != kerr.NoReassignmentInProgress || len(b.PartitionReassignments(nil)) != 0) {
		t.Fatalf("cancelling again: %v", err)
	}
	// The move driver may already have taken the cancelled move to its end (brokers 7 and
	// 8 never run, so no learner was caught up): listed, it must show the cancel; then it
	// ends back on the original replica.
	got = b.PartitionReassignments(nil)
	want.Cancelled, want.Adding, want.Removing, want.Replicas = true, []int32{}, []int32{7, 8}, []int32{self, 7, 8}
	if len(got) > 1 || len(got) == 1 && !equalInfo(got[0], want) {
		t.Fatalf("after cancel %+v, want %+v", got, want)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(b.PartitionReassignments(nil)) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled move is still listed: %+v", b.PartitionReassignments(nil))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if tp, _ := b.topic("t"); !slices.Equal(tp.Assignment[0], []int32{self}) {
		t.Fatalf("after the cancel the assignment is %v, want [%d]", tp.Assignment[0], self)
	}
}

func TestAlterPartitionReassignmentKeepsMinInsyncRacks(t *testing.T) {
	b := moveCluster(t)
	if err := b.SetTopicConfig("t", map[string]string{"min.insync.racks": "2"}); err != nil {
		t.Fatal(err)
	}
	err := b.AlterPartitionReassignment("t", 0, []int32{7})
	if err == nil || err.Code != kerr.InvalidReplicaAssignment || !strings.Contains(err.Msg, "min.insync.racks=2 cannot be met by the target: partition t-0: its replicas 7 (rack r1) span 1 declared rack") {
		t.Fatalf("move into one rack: %v", err)
	}
	if got := b.PartitionReassignments(nil); len(got) != 0 {
		t.Fatalf("a refused move was recorded: %v", got)
	}
	if err := b.AlterPartitionReassignment("t", 0, []int32{7, 8}); err != nil {
		t.Fatalf("move across two racks: %v", err)
	}
}

func equalInfo(a, b ReassignmentInfo) bool {
	return a.Topic == b.Topic && a.Partition == b.Partition && slices.Equal(a.Original, b.Original) &&
		slices.Equal(a.Target, b.Target) && slices.Equal(a.Adding, b.Adding) && slices.Equal(a.Removing, b.Removing) &&
		slices.Equal(a.Replicas, b.Replicas) && a.Cancelled == b.Cancelled && a.Final == b.Final
}
