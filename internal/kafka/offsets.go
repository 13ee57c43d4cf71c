package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleListOffsets(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		t := kmsg.NewListOffsetsResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			out := kmsg.NewListOffsetsResponseTopicPartition()
			out.Partition = rp.Partition
			out.Timestamp, out.Offset, out.LeaderEpoch = -1, -1, -1
			p, kerrv := s.b.Partition(rt.Topic, rp.Partition)
			if kerrv == nil {
				kerrv = p.CheckEpoch(rp.CurrentLeaderEpoch)
			}
			if kerrv == nil {
				off, ts, err := p.ListOffset(rp.Timestamp)
				kerrv = err
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
	for _, rt := range req.Topics {
		t := kmsg.NewOffsetForLeaderEpochResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			out := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			out.Partition = rp.Partition
			out.LeaderEpoch, out.EndOffset = -1, -1
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
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteRecordsResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			out := kmsg.NewDeleteRecordsResponseTopicPartition()
			out.Partition = rp.Partition
			out.LowWatermark = -1
			p, kerrv := s.b.Partition(rt.Topic, rp.Partition)
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
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return respond(resp)
	}
	// A producer that re-initialises keeps its id with the next epoch (KIP-360), until the
	// epoch would overflow.
	if req.ProducerID >= 0 && req.ProducerEpoch >= 0 && req.ProducerEpoch < 32767-1 {
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch+1
		return respond(resp)
	}
	id, err := s.b.AllocateProducerID()
	if err != nil {
		resp.ErrorCode = err.Code.Code
		return respond(resp)
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return respond(resp)
}
