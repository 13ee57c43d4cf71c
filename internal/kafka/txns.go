package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/group"
	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/txn"
)

// The transaction coordinator's requests (DESIGN.md §10): InitProducerId with a
// transactional id, AddPartitionsToTxn in its client-facing versions (v0-v3),
// AddOffsetsToTxn, EndTxn, DescribeTransactions and ListTransactions. Each waits for the
// coordinator in its respondFunc, so the connection goes on reading while a change becomes
// durable. Cairn serves transaction.version 0 (KIP-890 part 1 only: the partition leader
// verifies a transaction's first batch with the coordinator); ApiVersions advertises no
// transaction.version feature, which clients read as 0, and EndTxn stops at v3, so
// clients keep adding partitions explicitly.

// fenced is what a request version that predates PRODUCER_FENCED is told instead.
func fenced(err *kerr.Error, version, since int16) *kerr.Error {
	if err == kerr.ProducerFenced && version < since {
		return kerr.InvalidProducerEpoch
	}
	return err
}

func initTransactionalProducerID(s *Server, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) respondFunc {
	id := *req.TransactionalID
	if id == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return respond(resp)
	}
	pid, epoch := int64(-1), int16(-1)
	if req.Version >= 3 {
		pid, epoch = req.ProducerID, req.ProducerEpoch
	}
	return func(context.Context) kmsg.Response {
		gotPID, gotEpoch, err := s.b.Txns().InitProducerID(id, req.TransactionTimeoutMillis, pid, epoch)
		resp.ErrorCode = errCode(fenced(err, req.Version, 4))
		if err == nil {
			resp.ProducerID, resp.ProducerEpoch = gotPID, gotEpoch
		}
		return resp
	}
}

func handleAddPartitionsToTxn(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	answer := func(code func(topic string, partition int32) int16) {
		resp.Topics = resp.Topics[:0]
		for _, rt := range req.Topics {
			t := kmsg.NewAddPartitionsToTxnResponseTopic()
			t.Topic = rt.Topic
			for _, p := range rt.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code(rt.Topic, p)
				t.Partitions = append(t.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, t)
		}
	}
	if !s.authorized(ctx, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID) {
		answer(func(string, int32) int16 { return kerr.TransactionalIDAuthorizationFailed.Code })
		return respond(resp)
	}
	// A topic the client may not write, or a coordinator's topic (AddOffsetsToTxn adds a
	// group's offsets partition itself), fails the request whole, as in Kafka: it gets
	// TOPIC_AUTHORIZATION_FAILED or INVALID_TOPIC_EXCEPTION and the rest
	// OPERATION_NOT_ATTEMPTED.
	writable := s.topicChecks(ctx, kmsg.ACLOperationWrite)
	refusal := func(topic string) *kerr.Error {
		switch {
		case !writable.allowed(topic):
			return kerr.TopicAuthorizationFailed
		case broker.IsInternalTopic(topic):
			return kerr.InvalidTopicException
		}
		return nil
	}
	refused := false
	var parts []txn.TopicPartition
	for _, rt := range req.Topics {
		if refusal(rt.Topic) != nil {
			refused = true
		}
		for _, p := range rt.Partitions {
			parts = append(parts, txn.TopicPartition{Topic: rt.Topic, Partition: p})
		}
	}
	if refused {
		answer(func(topic string, _ int32) int16 {
			if err := refusal(topic); err != nil {
				return err.Code
			}
			return kerr.OperationNotAttempted.Code
		})
		return respond(resp)
	}
	if len(parts) == 0 {
		return respond(resp)
	}
	return func(context.Context) kmsg.Response {
		errs := s.b.Txns().AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts)
		answer(func(topic string, p int32) int16 {
			return errCode(fenced(errs[txn.TopicPartition{Topic: topic, Partition: p}], req.Version, 2))
		})
		return resp
	}
}

func handleAddOffsetsToTxn(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !s.authorized(ctx, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return respond(resp)
	case !s.authorizedGroup(ctx, kmsg.ACLOperationRead, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	case req.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return respond(resp)
	}
	return func(context.Context) kmsg.Response {
		n := s.b.Groups().Partitions()
		if n <= 0 {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
		// The group's offsets partition joins the transaction, so __consumer_offsets must
		// exist, whether or not the client looked the group's coordinator up first.
		if _, err := s.b.GroupCoordinator(req.Group); err != nil {
			resp.ErrorCode = err.Code
			return resp
		}
		err := s.b.Txns().AddOffsets(req.TransactionalID, req.ProducerID, req.ProducerEpoch, group.PartitionFor(req.Group, n))
		resp.ErrorCode = errCode(fenced(err, req.Version, 2))
		return resp
	}
}

func handleEndTxn(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if !s.authorized(ctx, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return respond(resp)
	}
	return func(context.Context) kmsg.Response {
		err := s.b.Txns().EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
		resp.ErrorCode = errCode(fenced(err, req.Version, 2))
		return resp
	}
}

func handleDescribeTransactions(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		if !s.authorized(ctx, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, id) {
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		md, err := s.b.Txns().Describe(id)
		st.ErrorCode = errCode(err)
		if err == nil {
			st.State, st.TimeoutMillis, st.ProducerID, st.ProducerEpoch = md.State.String(), md.TimeoutMs, md.ProducerID, md.ProducerEpoch
			if !md.StartTime.IsZero() {
				st.StartTimestamp = md.StartTime.UnixMilli()
			}
			for _, tp := range md.Partitions {
				if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
					t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
					t.Topic = tp.Topic
					st.Topics = append(st.Topics, t)
				}
				last := &st.Topics[len(st.Topics)-1]
				last.Partitions = append(last.Partitions, tp.Partition)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return respond(resp)
}

func handleListTransactions(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var states []txn.State
	for _, name := range req.StateFilters {
		st, ok := txn.ParseState(name)
		if !ok {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			continue
		}
		states = append(states, st)
	}
	if len(req.StateFilters) > 0 && len(states) == 0 {
		return respond(resp) // only unknown states: nothing matches
	}
	now := time.Now()
	for _, md := range s.b.Txns().List(states, req.ProducerIDFilters) {
		if req.Version >= 1 && req.DurationFilterMillis >= 0 &&
			(md.StartTime.IsZero() || now.Sub(md.StartTime) < time.Duration(req.DurationFilterMillis)*time.Millisecond) {
			continue
		}
		if !s.authorized(ctx, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, md.TransactionalID) {
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = md.TransactionalID, md.ProducerID, md.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return respond(resp)
}

func handleTxnOffsetCommit(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	answer := func(code func(i, j int) int16) *kmsg.TxnOffsetCommitResponse {
		resp.Topics = resp.Topics[:0]
		for i, rt := range req.Topics {
			t := kmsg.NewTxnOffsetCommitResponseTopic()
			t.Topic = rt.Topic
			for j, p := range rt.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code(i, j)
				t.Partitions = append(t.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
	all := func(err *kerr.Error) respondFunc {
		return respond(answer(func(int, int) int16 { return err.Code }))
	}
	switch {
	case !s.authorized(ctx, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID):
		return all(kerr.TransactionalIDAuthorizationFailed)
	case !s.authorizedGroup(ctx, kmsg.ACLOperationRead, req.Group):
		return all(kerr.GroupAuthorizationFailed)
	}
	readable := s.topicChecks(ctx, kmsg.ACLOperationRead)
	tr := group.TxnCommitRequest{Group: req.Group, ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, Generation: -1}
	if req.Version >= 3 {
		tr.MemberID, tr.InstanceID, tr.Generation = req.MemberID, req.InstanceID, req.Generation
	}
	slot := make([]int, len(req.Topics)) // each topic's index in tr.Topics, -1 if refused
	for i, t := range req.Topics {
		if !readable.allowed(t.Topic) {
			slot[i] = -1
			continue
		}
		slot[i] = len(tr.Topics)
		ct := group.CommitTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			cp := group.CommitPartition{Partition: p.Partition, Offset: p.Offset, LeaderEpoch: -1, Metadata: p.Metadata, TimestampMs: -1}
			if req.Version >= 2 {
				cp.LeaderEpoch = p.LeaderEpoch
			}
			ct.Partitions = append(ct.Partitions, cp)
		}
		tr.Topics = append(tr.Topics, ct)
	}
	if len(tr.Topics) == 0 {
		return respond(answer(func(int, int) int16 { return kerr.TopicAuthorizationFailed.Code }))
	}
	return func(context.Context) kmsg.Response {
		co := s.b.Groups()
		if co.Partitions() <= 0 {
			return answer(func(int, int) int16 { return kerr.CoordinatorNotAvailable.Code })
		}
		offsets := txn.TopicPartition{Topic: txn.OffsetsTopic, Partition: group.PartitionFor(req.Group, co.Partitions())}
		wait := co.TxnCommit(tr, func() *kerr.Error {
			vctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return s.b.VerifyTxnPartition(vctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, offsets)
		})
		errs := wait()
		return answer(func(i, j int) int16 {
			if slot[i] < 0 {
				return kerr.TopicAuthorizationFailed.Code
			}
			return errCode(fenced(errs[slot[i]][j], req.Version, 3))
		})
	}
}

func handleDescribeProducers(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	readable := s.topicChecks(ctx, kmsg.ACLOperationRead)
	for _, rt := range req.Topics {
		t := kmsg.NewDescribeProducersResponseTopic()
		t.Topic = rt.Topic
		for _, id := range rt.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = id
			if !readable.allowed(rt.Topic) {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				t.Partitions = append(t.Partitions, rp)
				continue
			}
			p, err := s.b.Partition(rt.Topic, id)
			var producers []partition.ProducerInfo
			if err == nil {
				producers, err = p.Producers()
			}
			rp.ErrorCode, rp.ErrorMessage = errCode(err), errMsg(err, "")
			for _, pi := range producers {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = pi.ProducerID, int32(pi.ProducerEpoch), pi.LastSequence
				ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = -1, pi.CoordinatorEpoch, pi.TxnStartOffset
				rp.ActiveProducers = append(rp.ActiveProducers, ap)
			}
			t.Partitions = append(t.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return respond(resp)
}
