package kafka

// AlterPartitionReassignments, versions 0 and 1, and ListPartitionReassignments, version 0
// (KIP-455). Any broker answers: it forwards the change to the controller leader, so
// NOT_CONTROLLER is only returned when no controller leader is known.
//
// Alter records each partition's target replica set (Replicas null: cancels its move) in
// the controller's log; the partition's leader then moves it through learners and the
// joint configuration. The answer comes once the record is committed, not once the move is
// done: list it to follow it. Replicas equal to the current assignment succeed and record
// nothing, as in Kafka. Per partition: UNKNOWN_TOPIC_OR_PARTITION; INVALID_REPLICA_ASSIGNMENT
// for an empty set, a repeated, negative or unregistered broker id, or a target whose
// declared racks cannot meet the topic's min.insync.racks; REASSIGNMENT_IN_PROGRESS for a
// second move of a moving partition, and for a cancel once the move is leaving its joint
// configuration (too late to go back); NO_REASSIGNMENT_IN_PROGRESS for a cancel with none;
// INVALID_REPLICATION_FACTOR for a change of replica count when v1's
// AllowReplicationFactorChange is false; INVALID_REQUEST for a partition named twice (none
// of its entries is acted on). The top-level error is only REQUEST_TIMED_OUT, when
// TimeoutMillis passes first: the partitions not done by then say REQUEST_TIMED_OUT and
// may still be applied. Deviation: a TimeoutMillis of zero or less waits as long as one
// metadata change may take (15 s) rather than timing out at once.
//
// List returns the moves in progress, every one when Topics is null, else those of the
// named partitions; partitions not moving and unknown topics are left out, as in Kafka.
// Replicas is every broker that may hold a replica while it moves (the goal first, then
// the removing ones); a cancelled move lists no adding replicas and the target's new ones
// as removing.

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
)

// reassignParallelism bounds the proposals one Alter request has in flight.
const reassignParallelism = 8

type reassignKey struct {
	topic     string
	partition int32
}

func handleAlterPartitionAssignments(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	if !s.authorizedCluster(ctx, kmsg.ACLOperationAlter) {
		return respond(alterAssignmentsRefused(req, resp))
	}
	seen := map[reassignKey]int{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			seen[reassignKey{rt.Topic, rp.Partition}]++
		}
	}
	// results[i][j] answers req.Topics[i].Partitions[j]; nil until done.
	results := make([][]*broker.Error, len(req.Topics))
	done := make([][]bool, len(req.Topics))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, reassignParallelism)
	for i, rt := range req.Topics {
		results[i] = make([]*broker.Error, len(rt.Partitions))
		done[i] = make([]bool, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			if err := checkAlterPartition(s, req, rt.Topic, rp, seen); err != nil {
				results[i][j], done[i][j] = err, true
				continue
			}
			wg.Add(1)
			go func(i, j int, topic string, p int32, replicas []int32) {
				defer wg.Done()
				sem <- struct{}{}
				err := s.b.AlterPartitionReassignment(topic, p, replicas)
				<-sem
				mu.Lock()
				results[i][j], done[i][j] = err, true
				mu.Unlock()
			}(i, j, rt.Topic, rp.Partition, rp.Replicas)
		}
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	wait := 15 * time.Second
	if req.TimeoutMillis > 0 {
		wait = time.Duration(req.TimeoutMillis) * time.Millisecond
	}
	deadline := time.Now().Add(wait)
	return func(ctx context.Context) kmsg.Response {
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		timedOut := false
		select {
		case <-all:
		case <-timer.C:
			timedOut = true
		case <-ctx.Done():
			timedOut = true
		}
		mu.Lock()
		defer mu.Unlock()
		for i, rt := range req.Topics {
			out := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			out.Topic = rt.Topic
			for j, rp := range rt.Partitions {
				po := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				po.Partition = rp.Partition
				switch err := results[i][j]; {
				case !done[i][j]:
					po.ErrorCode, po.ErrorMessage = kerr.RequestTimedOut.Code, strPtr("the controller had not recorded the change when the request's timeout passed; it may still be applied")
				case err != nil:
					po.ErrorCode, po.ErrorMessage = err.Code.Code, strPtr(err.Msg)
				}
				out.Partitions = append(out.Partitions, po)
			}
			resp.Topics = append(resp.Topics, out)
		}
		if timedOut {
			resp.ErrorCode, resp.ErrorMessage = kerr.RequestTimedOut.Code, strPtr("not every partition's change was recorded within the request's timeout")
		}
		return resp
	}
}

// checkAlterPartition refuses, before anything is proposed, what the request itself
// makes wrong: a partition named twice, or a replica count change v1 forbids.
func checkAlterPartition(s *Server, req *kmsg.AlterPartitionAssignmentsRequest, topic string, rp kmsg.AlterPartitionAssignmentsRequestTopicPartition, seen map[reassignKey]int) *broker.Error {
	if seen[reassignKey{topic, rp.Partition}] > 1 {
		return &broker.Error{Code: kerr.InvalidRequest, Msg: "the partition appears more than once in the request"}
	}
	if rp.Replicas == nil || req.AllowReplicationFactorChange {
		return nil
	}
	current, ok := s.b.PartitionAssignment(topic, rp.Partition)
	if ok && len(current) != len(rp.Replicas) {
		return &broker.Error{Code: kerr.InvalidReplicationFactor, Msg: "the request does not allow a replication factor change, and the target has another number of replicas than the partition"}
	}
	return nil
}

func handleListPartitionReassignments(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !s.authorizedCluster(ctx, kmsg.ACLOperationDescribe) {
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, strPtr(kerr.ClusterAuthorizationFailed.Message)
		return respond(resp)
	}
	var filter map[string][]int32 // nil: every move
	if req.Topics != nil {
		filter = map[string][]int32{}
		for _, rt := range req.Topics {
			filter[rt.Topic] = append(append([]int32{}, filter[rt.Topic]...), rt.Partitions...)
		}
	}
	index := map[string]int{}
	for _, m := range s.b.PartitionReassignments(filter) {
		i, ok := index[m.Topic]
		if !ok {
			t := kmsg.NewListPartitionReassignmentsResponseTopic()
			t.Topic = m.Topic
			resp.Topics = append(resp.Topics, t)
			i = len(resp.Topics) - 1
			index[m.Topic] = i
		}
		p := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		p.Partition, p.Replicas, p.AddingReplicas, p.RemovingReplicas = m.Partition, m.Replicas, m.Adding, m.Removing
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	return respond(resp)
}
