package kafka

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAlterPartitionAssignmentsRefusesBadInput sends each kind of bad move over the wire
// with kadm: each partition gets its own clear error, and nothing is recorded or moved.
func TestAlterPartitionAssignmentsRefusesBadInput(t *testing.T) {
	addr, b := startBroker(t)
	createTopic(t, addr, "t", 2, 0)
	self := b.NodeID()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("nope", 0, []int32{self})
	req.Assign("t", 0, []int32{self, 42})
	req.Assign("t", 1, []int32{self, self})
	req.Assign("t", 7, []int32{self})
	resps, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		err error
		msg string
	}{
		"nope-0": {kerr.UnknownTopicOrPartition, `topic "nope" does not exist`},
		"t-0":    {kerr.InvalidReplicaAssignment, "broker 42 is not registered"},
		"t-1":    {kerr.InvalidReplicaAssignment, "named twice"},
		"t-7":    {kerr.UnknownTopicOrPartition, "no partition 7"},
	}
	checkAlter(t, resps, want)

	// An empty set and a negative id, and cancels with nothing to cancel.
	req = nil
	req.Assign("t", 0, []int32{})
	req.Assign("t", 1, []int32{-5})
	resps, err = adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	checkAlter(t, resps, map[string]struct {
		err error
		msg string
	}{"t-0": {kerr.InvalidReplicaAssignment, "empty"}, "t-1": {kerr.InvalidReplicaAssignment, "broker id -5 is negative"}})
	req = nil
	req.CancelAssign("t", 0)
	req.CancelAssign("nope", 0)
	resps, err = adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	checkAlter(t, resps, map[string]struct {
		err error
		msg string
	}{"t-0": {kerr.NoReassignmentInProgress, "not being reassigned"}, "nope-0": {kerr.UnknownTopicOrPartition, "does not exist"}})

	// A partition named twice in one request: neither entry is acted on.
	raw := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "t"
	for range 2 {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = 1, []int32{self}
		rt.Partitions = append(rt.Partitions, rp)
	}
	raw.Topics = append(raw.Topics, rt)
	rresp, err := raw.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if rresp.ErrorCode != 0 || len(rresp.Topics) != 1 || len(rresp.Topics[0].Partitions) != 2 {
		t.Fatalf("duplicate partition: %+v", rresp)
	}
	for _, p := range rresp.Topics[0].Partitions {
		if p.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("duplicate partition: %s, want INVALID_REQUEST", kerr.ErrorForCode(p.ErrorCode))
		}
	}

	// v1 without a replication factor change allowed refuses another replica count.
	raw = kmsg.NewPtrAlterPartitionAssignmentsRequest()
	raw.AllowReplicationFactorChange = false
	rt = kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = 0, []int32{self, 42}
	rt.Partitions = append(rt.Partitions, rp)
	raw.Topics = append(raw.Topics, rt)
	if rresp, err = raw.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if code := rresp.Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidReplicationFactor.Code {
		t.Errorf("rf change forbidden: %s, want INVALID_REPLICATION_FACTOR", kerr.ErrorForCode(code))
	}

	// The current assignment again is accepted and records nothing.
	req = nil
	req.Assign("t", 0, []int32{self})
	if resps, err = adm.AlterPartitionAssignments(ctx, req); err != nil || resps.Error() != nil {
		t.Fatalf("no-op move: %v %v", err, resps.Error())
	}

	// Nothing was recorded, and the replicas are what they were.
	listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"t": {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 0 {
		t.Fatalf("refused moves were recorded: %v", listed)
	}
	all, err := kmsg.NewPtrListPartitionReassignmentsRequest().RequestWith(ctx, cl)
	if err != nil || all.ErrorCode != 0 || len(all.Topics) != 0 {
		t.Fatalf("list all: %+v %v", all, err)
	}
	md, err := adm.Metadata(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range md.Topics["t"].Partitions {
		if !slices.Equal(p.Replicas, []int32{self}) {
			t.Fatalf("partition %d replicas %v after refused moves", p.Partition, p.Replicas)
		}
	}
}

func checkAlter(t *testing.T, resps kadm.AlterPartitionAssignmentsResponses, want map[string]struct {
	err error
	msg string
}) {
	t.Helper()
	n := 0
	resps.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
		n++
		key := r.Topic + "-" + string(rune('0'+r.Partition))
		w, ok := want[key]
		if !ok {
			t.Errorf("unexpected response for %s", key)
			return
		}
		if !errors.Is(r.Err, w.err) || !strings.Contains(r.ErrMessage, w.msg) {
			t.Errorf("%s: %v %q, want %v with %q", key, r.Err, r.ErrMessage, w.err, w.msg)
		}
	})
	if n != len(want) {
		t.Errorf("%d responses, want %d", n, len(want))
	}
}
