package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
)

// handleListOffsets answers ListOffsets. IsolationLevel (v2 and later) read_committed
// bounds the answers by the last stable offset rather than the high watermark (see
// partition.Partition.ListOffset); an isolation level other than 0 or 1 is
// INVALID_REQUEST on every partition (Kafka's IsolationLevel.forId throws on it: the
// request fails with UNKNOWN_SERVER_ERROR).
func handleListOffsets(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	badIsolation := !validIsolation(req.IsolationLevel)
	committed := req.IsolationLevel == readCommitted
	// With follower fetching on, a follower answers consumers against the bound its Fetch
	// serves up to (see fetch.go); otherwise only the leader answers.
	followerRead := req.ReplicaID < 0 && s.b.FollowerFetching()
	describable := s.topicChecks(ctx, kmsg.ACLOperationDescribe)
	for _, rt := range req.Topics {
		t := kmsg.NewListOffsetsResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			out := kmsg.NewListOffsetsResponseTopicPartition()
			out.Partition = rp.Partition
			out.Timestamp, out.Offset, out.LeaderEpoch = -1, -1, -1
			if !describable.allowed(rt.Topic) {
				out.ErrorCode = kerr.TopicAuthorizationFailed.Code
				t.Partitions = append(t.Partitions, out)
				continue
			}
			if badIsolation {
				out.ErrorCode = kerr.InvalidRequest.Code
				t.Partitions = append(t.Partitions, out)
				continue
			}
			p, kerrv := s.b.Partition(rt.Topic, rp.Partition)
			if kerrv == nil && !followerRead {
				kerrv = p.CheckEpoch(rp.CurrentLeaderEpoch)
			}
			if kerrv == nil {
				var off, ts int64
				if followerRead {
					off, ts, kerrv = p.FollowerListOffset(rp.Timestamp, rp.CurrentLeaderEpoch, committed)
				} else {
					off, ts, kerrv = p.ListOffset(rp.Timestamp, committed)
				}
				out.Offset, out.Timestamp = off, ts
				if off >= 0 {
					out.LeaderEpoch = p.LeaderEpoch()
				}
			}
			out.ErrorCode = errCode(kerrv)
			t.Partitions = append(t.Partitions, out)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return respond(resp)
}

func handleOffsetForLeaderEpoch(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	describable := s.topicChecks(ctx, kmsg.ACLOperationDescribe)
	for _, rt := range req.Topics {
		t := kmsg.NewOffsetForLeaderEpochResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			out := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			out.Partition = rp.Partition
			out.LeaderEpoch, out.EndOffset = -1, -1
			if !describable.allowed(rt.Topic) {
				out.ErrorCode = kerr.TopicAuthorizationFailed.Code
				t.Partitions = append(t.Partitions, out)
				continue
			}
			p, kerrv := s.b.Partition(rt.Topic, rp.Partition)
			if kerrv == nil && req.Version >= 2 {
				kerrv = p.CheckEpoch(rp.CurrentLeaderEpoch)
			}
			if kerrv == nil {
				out.LeaderEpoch, out.EndOffset = p.EpochEndOffset(rp.LeaderEpoch)
			}
			out.ErrorCode = errCode(kerrv)
			t.Partitions = append(t.Partitions, out)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return respond(resp)
}

func handleDeleteRecords(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	deletable := s.topicChecks(ctx, kmsg.ACLOperationDelete)
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteRecordsResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			out := kmsg.NewDeleteRecordsResponseTopicPartition()
			out.Partition = rp.Partition
			out.LowWatermark = -1
			if !deletable.allowed(rt.Topic) {
				out.ErrorCode = kerr.TopicAuthorizationFailed.Code
				t.Partitions = append(t.Partitions, out)
				continue
			}
			p, kerrv := s.b.Partition(rt.Topic, rp.Partition)
			if kerrv == nil && broker.IsInternalTopic(rt.Topic) {
				// Cutting the internal topic would silently drop committed offsets.
				kerrv = kerr.InvalidTopicException
			}
			if kerrv == nil {
				out.LowWatermark, kerrv = p.DeleteRecords(rp.Offset)
			}
			out.ErrorCode = errCode(kerrv)
			t.Partitions = append(t.Partitions, out)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return respond(resp)
}

func handleInitProducerID(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		if !s.authorized(ctx, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *req.TransactionalID) {
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return respond(resp)
		}
		return initTransactionalProducerID(s, req, resp)
	}
	if !s.mayWriteIdempotently(ctx) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return respond(resp)
	}
	// Without transactions every InitProducerId gets a fresh id, whatever id and epoch the
	// client offers (as Kafka does): echoing a client's id back would let any client fence
	// another producer or share its id.
	id, err := s.b.AllocateProducerID()
	if err != nil {
		resp.ErrorCode = err.Code.Code
		return respond(resp)
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return respond(resp)
}
