package kafka

// Fetch, versions 4 to 12. Consumers only: a fetch with a replica id (Kafka's own
// replication) is refused with NOT_LEADER_OR_FOLLOWER, since Cairn's replicas replicate
// through Raft. Fetch sessions (KIP-227, v7 and later) are served: fetchsession.go.
//
// Follower fetching (KIP-392, v11 and later), on while replica.selector.class is
// RackAwareReplicaSelector: a leader answers a consumer that sends its rack (RackId) with
// a PreferredReadReplica in that rack and no records, at once; that follower serves it, up
// to the visible offset its leader told it of (internal/partition/follower.go). Deviation:
// where a follower cannot serve (its leader's broker silent, the offset below its log
// start, no leader known) it answers with its leader as PreferredReadReplica rather than
// an error, since clients move to a preferred replica at once but stay on a follower that
// answers NOT_LEADER_OR_FOLLOWER until their recheck interval; below its log start Kafka
// would say OFFSET_OUT_OF_RANGE, on which librdkafka resets the consumer's offset. A
// RackId over 255 bytes is INVALID_REQUEST for the whole request, with nothing read.
//
// Isolation levels (v4 and later; DESIGN.md §10): read_uncommitted (0) reads up to the high
// watermark, aborted data included; read_committed (1) up to the last stable offset, with
// the aborted transactions among the records returned in AbortedTransactions (an empty
// array when there are none; null for read_uncommitted), as Kafka answers. Every answer
// carries the replica's LastStableOffset. An offset between the last stable offset and
// the high watermark gets no records and no error under read_committed. A follower
// serving a consumer (KIP-392) bounds read_committed by its own last stable offset. Any
// other isolation level is INVALID_REQUEST for the whole request, with nothing read. In
// Kafka, IsolationLevel.forId throws on it and the request fails with
// UNKNOWN_SERVER_ERROR, which tells a client nothing about what it sent wrong.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/partition"
)

// maxRackIDBytes bounds a consumer's RackId: a rack is a short name (a zone), and a
// longer one is a broken or hostile client, refused before anything is read.
const maxRackIDBytes = 255

// fetchMaxBytesCap bounds a Fetch response whatever the client asks for (Kafka's
// fetch.max.bytes default), so one request cannot make the broker hold gigabytes.
const fetchMaxBytesCap = 55 << 20

// handleFetch serves consumers. It answers once min bytes are available or max wait passes,
// waking as soon as any partition it reads gets new visible data.
func handleFetch(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.FetchRequest)
	if req.ReplicaID >= 0 || (req.Version >= 15 && req.ReplicaState.ID >= 0) {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.NotLeaderForPartition.Code
		return respond(resp)
	}
	if req.Version >= 11 && len(req.Rack) > maxRackIDBytes {
		s.lg.Warn("fetch refused: its rack id is over the limit", "bytes", len(req.Rack), "limit", maxRackIDBytes)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.InvalidRequest.Code
		return respond(resp)
	}
	if !validIsolation(req.IsolationLevel) {
		s.lg.Warn("fetch refused: unknown isolation level", "isolation_level", req.IsolationLevel)
		return respond(refuseFetch(req, kerr.InvalidRequest))
	}
	fctx, req := s.sessionFetch(ctx, req)
	if fctx.errCode != 0 {
		return respond(sessionError(req, fctx.errCode))
	}
	// READ on each topic, internal ones included, asked once per request rather than on
	// every wake of the long poll.
	readable := s.topicChecks(ctx, kmsg.ACLOperationRead)
	denied := map[string]bool{}
	anyAllowed := false
	for _, rt := range req.Topics {
		if readable.allowed(rt.Topic) {
			anyAllowed = anyAllowed || len(rt.Partitions) > 0
		} else {
			denied[rt.Topic] = true
		}
	}
	return func(ctx context.Context) kmsg.Response {
		maxBytes := req.MaxBytes
		if maxBytes <= 0 || maxBytes > fetchMaxBytesCap {
			maxBytes = fetchMaxBytesCap
		}
		wake := make(chan struct{}, 1)
		var unwatch []func()
		defer func() {
			for _, u := range unwatch {
				u()
			}
		}()
		deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
		var resp *fetchResponse
		for first := true; ; first = false {
			if resp != nil {
				// Read again below: the files of the answer not sent are let go.
				resp.release()
			}
			var total int
			var stop bool
			resp, total, stop = s.fetchOnce(s.readNow(&fctx, req), maxBytes, denied)
			// A fetch of nothing but denied partitions is answered at once, as Kafka does;
			// denied partitions next to readable ones do not cut the long poll short, or a
			// consumer of both would spin.
			if stop || !anyAllowed || total >= int(req.MinBytes) || !time.Now().Before(deadline) {
				return s.sessionAnswer(ctx, &fctx, resp)
			}
			if first {
				// Register after the first read and then read again, so that data arriving
				// between the read and the registration is not missed.
				unwatch = s.watchFetched(req, denied, wake)
				continue
			}
			t := time.NewTimer(time.Until(deadline))
			s.parkedFetches.Add(1)
			select {
			case <-wake:
			case <-t.C:
			case <-ctx.Done():
				s.parkedFetches.Add(-1)
				t.Stop()
				return s.sessionAnswer(ctx, &fctx, resp)
			}
			s.parkedFetches.Add(-1)
			t.Stop()
		}
	}
}

// Isolation levels, as Fetch and ListOffsets carry them.
const (
	readUncommitted = 0
	readCommitted   = 1
)

func validIsolation(level int8) bool { return level == readUncommitted || level == readCommitted }

// refuseFetch answers a whole Fetch with code, top-level (v7 and later) and on every
// partition (the only place v4 to v6 can carry it), with nothing read.
func refuseFetch(req *kmsg.FetchRequest, code *kerr.Error) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.ErrorCode = code.Code
	for _, rt := range req.Topics {
		t := kmsg.NewFetchResponseTopic()
		t.Topic, t.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			out := kmsg.NewFetchResponseTopicPartition()
			out.Partition, out.ErrorCode = rp.Partition, code.Code
			out.HighWatermark, out.LastStableOffset, out.LogStartOffset = -1, -1, -1
			out.RecordBatches = []byte{}
			t.Partitions = append(t.Partitions, out)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// watchFetched has wake signalled whenever a partition the request reads moves, and
// returns the functions that stop it.
func (s *Server) watchFetched(req *kmsg.FetchRequest, denied map[string]bool, wake chan struct{}) []func() {
	var out []func()
	for _, rt := range req.Topics {
		if denied[rt.Topic] {
			continue
		}
		for _, rp := range rt.Partitions {
			if unwatch := s.b.WatchPartition(rt.Topic, rp.Partition, wake); unwatch != nil {
				out = append(out, unwatch)
			}
		}
	}
	return out
}

// abortedTransactions is a read_committed answer's AbortedTransactions: never null, as
// Kafka sends an empty array when there are none.
func abortedTransactions(aborted []partition.AbortedTxn) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	out := make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(aborted))
	for _, a := range aborted {
		t := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		t.ProducerID, t.FirstOffset = a.ProducerID, a.FirstOffset
		out = append(out, t)
	}
	return out
}

// fetchOnce reads every requested partition once, through Broker.Fetch. The records stay
// in their segment files where the log allows it (see partition.Partition.FetchFiles).
// stop reports an error that should be answered at once rather than waited out. The
// partitions of denied topics are answered TOPIC_AUTHORIZATION_FAILED without being read.
func (s *Server) fetchOnce(req *kmsg.FetchRequest, maxBytes int32, denied map[string]bool) (*fetchResponse, int, bool) {
	resp := &fetchResponse{FetchResponse: req.ResponseKind().(*kmsg.FetchResponse)}
	total := 0
	stop := false
	followerRead := req.Version >= 11 && s.b.FollowerFetching()
	for _, rt := range req.Topics {
		var files []partition.FileRecords
		t := kmsg.NewFetchResponseTopic()
		t.Topic = rt.Topic
		t.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			out := kmsg.NewFetchResponseTopicPartition()
			out.Partition = rp.Partition
			// librdkafka rejects a null record set, so an empty answer is zero bytes.
			out.RecordBatches = []byte{}
			out.HighWatermark, out.LastStableOffset, out.LogStartOffset = -1, -1, -1
			if denied[rt.Topic] {
				out.ErrorCode = kerr.TopicAuthorizationFailed.Code
				t.Partitions = append(t.Partitions, out)
				files = append(files, partition.FileRecords{})
				continue
			}
			freq := partition.FetchRequest{Offset: rp.FetchOffset, CurrentLeaderEpoch: rp.CurrentLeaderEpoch, LastFetchedEpoch: -1,
				ReadCommitted: req.IsolationLevel == readCommitted}
			if req.Version >= 12 {
				freq.LastFetchedEpoch = rp.LastFetchedEpoch
			}
			if req.Version >= 11 {
				freq.ClientRack, freq.FollowerRead = req.Rack, followerRead
			}
			limit := min(rp.PartitionMaxBytes, maxBytes-int32(total))
			if limit > 0 || total == 0 {
				freq.MaxBytes = max(limit, 1)
			}
			res := s.b.Fetch(rt.Topic, rp.Partition, freq)
			// Only the first batch of the response may exceed the limits (KIP-74).
			if total > 0 && res.Size() > int64(limit) {
				res.Release()
				res.Records, res.Files, res.Aborted = nil, partition.FileRecords{}, nil
			}
			if res.Diverging != nil {
				out.DivergingEpoch.Epoch, out.DivergingEpoch.EndOffset = res.Diverging.Epoch, res.Diverging.EndOffset
				stop = true
			}
			out.ErrorCode = errCode(res.Err)
			if res.Err != nil && !res.NotServingYet {
				stop = true
			}
			if res.PreferredReadReplica > 0 {
				// The consumer is to read elsewhere: tell it now, not after the long poll.
				out.PreferredReadReplica = res.PreferredReadReplica
				stop = true
			}
			out.HighWatermark, out.LastStableOffset, out.LogStartOffset = res.HighWatermark, res.LastStable, res.LogStart
			if res.Records != nil {
				out.RecordBatches = res.Records
			}
			if freq.ReadCommitted && res.Err == nil {
				out.AbortedTransactions = abortedTransactions(res.Aborted)
			}
			total += int(res.Size())
			t.Partitions = append(t.Partitions, out)
			files = append(files, res.Files)
		}
		resp.Topics = append(resp.Topics, t)
		resp.files = append(resp.files, files)
	}
	return resp, total, stop
}
