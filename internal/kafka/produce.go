package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/partition"
)

func handleProduce(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)

	// Every partition's answer; waits[i] is set where acks=-1 still has to wait.
	type slot struct {
		rp   *kmsg.ProduceResponseTopicPartition
		wait func(context.Context) partition.ProduceResult
	}
	var slots []slot
	reject := func(err *kerr.Error, msg string) {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				rp := &resp.Topics[i].Partitions[j]
				rp.ErrorCode, rp.ErrorMessage = err.Code, errMsg(err, msg)
			}
		}
	}
	for _, rt := range req.Topics {
		t := kmsg.NewProduceResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewProduceResponseTopicPartition()
			p.Partition = rp.Partition
			p.BaseOffset = -1
			p.LogStartOffset = -1
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}

	switch {
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		reject(kerr.InvalidRequiredAcks, "acks must be -1 (all), 0 or 1")
		return respond(resp)
	case req.TransactionID != nil && *req.TransactionID == "":
		reject(kerr.InvalidRequest, "a transactional id may not be empty")
		return respond(resp)
	case req.TransactionID != nil && !s.authorized(ctx, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *req.TransactionID):
		reject(kerr.TransactionalIDAuthorizationFailed, "not authorized to write as transactional id "+*req.TransactionID)
		return respond(resp)
	}

	writable := s.topicChecks(ctx, kmsg.ACLOperationWrite)
	requester := broker.Requester{Principal: principalOf(ctx), Host: hostOf(ctx)}
	for i, rt := range req.Topics {
		for j, rpart := range rt.Partitions {
			out := &resp.Topics[i].Partitions[j]
			if !writable.allowed(rt.Topic) {
				// Before the topic is looked up, so that a denied client learns nothing of
				// which topics exist (as Kafka).
				out.ErrorCode, out.ErrorMessage = kerr.TopicAuthorizationFailed.Code, strPtr("not authorized to write to topic "+rt.Topic)
				continue
			}
			if broker.IsInternalTopic(rt.Topic) {
				out.ErrorCode, out.ErrorMessage = kerr.InvalidTopicException.Code, strPtr(rt.Topic+" is internal: only its coordinator writes it")
				continue
			}
			timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
			var res partition.ProduceResult
			var wait func(context.Context) partition.ProduceResult
			if req.TransactionID != nil {
				res, wait = s.b.ProduceTxn(requester, *req.TransactionID, rt.Topic, rpart.Partition, rpart.Records, req.Acks, timeout)
			} else {
				res, wait = s.b.Produce(requester, rt.Topic, rpart.Partition, rpart.Records, req.Acks, timeout)
			}
			fillProduce(out, res)
			if wait != nil {
				slots = append(slots, slot{out, wait})
			}
		}
	}
	if req.Acks == 0 {
		return nil
	}
	if len(slots) == 0 {
		return respond(resp)
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	return func(ctx context.Context) kmsg.Response {
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		for _, sl := range slots {
			fillProduce(sl.rp, sl.wait(wctx))
		}
		return resp
	}
}

func fillProduce(out *kmsg.ProduceResponseTopicPartition, res partition.ProduceResult) {
	out.ErrorCode = errCode(res.Err)
	out.ErrorMessage = errMsg(res.Err, res.Msg)
	out.BaseOffset = res.BaseOffset
	out.LogStartOffset = res.LogStartOffset
	if res.Err != nil {
		out.BaseOffset, out.LogStartOffset = -1, -1
	}
}
