package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The Fetch handler's use of fetch sessions (fetchsession.go has the rules): a request is
// admitted into the cache, read as the session says, and its answer filtered and recorded.

// SetFetchSessionSlots sets max.incremental.fetch.session.cache.slots (0: no sessions).
// Call it before serving.
func (s *Server) SetFetchSessionSlots(n int) { s.sessions = newFetchSessions(n) }

// FetchSessionStats are the session cache's size and evictions, for the metrics.
func (s *Server) FetchSessionStats() (sessions, partitions int, evictions uint64) {
	return s.sessions.stats()
}

// sessionFetch admits req into the cache and returns the request the fetch stands for:
// req itself, or for an incremental fetch every partition of the session (its long poll
// watches them all; readNow picks those read each time).
func (s *Server) sessionFetch(ctx context.Context, req *kmsg.FetchRequest) (fetchContext, *kmsg.FetchRequest) {
	if req.Version < 7 { // no session fields: every request is sessionless
		return fetchContext{}, req
	}
	var forgotten []topicPartition
	for _, ft := range req.ForgottenTopics {
		for _, p := range ft.Partitions {
			forgotten = append(forgotten, topicPartition{ft.Topic, p})
		}
	}
	fctx := s.sessions.begin(principalOf(ctx), req.SessionID, req.SessionEpoch, requestParts(req), forgotten)
	if fctx.errCode != 0 || fctx.session == nil {
		return fctx, req
	}
	return fctx, withParts(req, fctx.parts)
}

// readNow is the request to read at this turn of the long poll: req, or for an
// incremental fetch the session's partitions that may have something to say.
func (s *Server) readNow(fctx *fetchContext, req *kmsg.FetchRequest) *kmsg.FetchRequest {
	if fctx.session == nil {
		return req
	}
	return withParts(req, fctx.toRead(func(tp topicPartition) versioned {
		p, err := s.b.Partition(tp.topic, tp.partition)
		if err != nil {
			return nil // an interface holding no partition, not a nil *Partition
		}
		return p
	}))
}

// withParts is req reading parts instead of its own partitions.
func withParts(req *kmsg.FetchRequest, parts []fetchPartition) *kmsg.FetchRequest {
	eff := *req
	eff.Topics = nil
	for _, fp := range parts {
		if n := len(eff.Topics); n == 0 || eff.Topics[n-1].Topic != fp.tp.topic {
			t := kmsg.NewFetchRequestTopic()
			t.Topic = fp.tp.topic
			eff.Topics = append(eff.Topics, t)
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition, p.FetchOffset, p.PartitionMaxBytes = fp.tp.partition, fp.fetchOffset, fp.maxBytes
		p.CurrentLeaderEpoch, p.LastFetchedEpoch = fp.currentLeaderEpoch, fp.lastFetchedEpoch
		t := &eff.Topics[len(eff.Topics)-1]
		t.Partitions = append(t.Partitions, p)
	}
	return &eff
}

// requestParts flattens req's partitions, in the order a response answers them.
func requestParts(req *kmsg.FetchRequest) []fetchPartition {
	var out []fetchPartition
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			out = append(out, fetchPartition{tp: topicPartition{rt.Topic, rp.Partition}, fetchOffset: rp.FetchOffset,
				maxBytes: rp.PartitionMaxBytes, currentLeaderEpoch: rp.CurrentLeaderEpoch, lastFetchedEpoch: rp.LastFetchedEpoch})
		}
	}
	return out
}

// sessionError is the answer to a request the cache refused: the error, no partitions.
func sessionError(req *kmsg.FetchRequest, code int16) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.ErrorCode = code
	return resp
}

// sessionAnswer filters an incremental answer to the partitions that have something to
// say, records what was answered, and sets the answer's session id.
func (s *Server) sessionAnswer(ctx context.Context, fctx *fetchContext, resp *fetchResponse) *fetchResponse {
	if fctx.session == nil && !fctx.open {
		return resp
	}
	// Positions of the answer's partitions in fctx.parts: all of them for a full fetch,
	// those of the last read for an incremental one.
	index := fctx.readIdx
	if fctx.session == nil {
		index = nil
	}
	answers := make([]fetchAnswer, len(fctx.parts))
	answered := make([]bool, len(fctx.parts))
	i := 0
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		files := resp.files[ti]
		keptParts, keptFiles := t.Partitions[:0], files[:0]
		for pi := range t.Partitions {
			p := t.Partitions[pi]
			a := fetchAnswer{records: len(p.RecordBatches) > 0 || files[pi].Len() > 0, errored: p.ErrorCode != 0,
				redirected: p.PreferredReadReplica >= 0 || p.DivergingEpoch.Epoch >= 0, highWatermark: p.HighWatermark, logStart: p.LogStartOffset}
			at := i
			if index != nil && i < len(index) {
				at = index[i]
			}
			i++
			keep := at >= len(fctx.parts) || fctx.mustAnswer(at, a)
			if at < len(fctx.parts) {
				answers[at], answered[at] = a, keep
			}
			if !keep {
				files[pi].Release()
				continue
			}
			keptParts, keptFiles = append(keptParts, p), append(keptFiles, files[pi])
		}
		t.Partitions, resp.files[ti] = keptParts, keptFiles
	}
	if fctx.session != nil { // an incremental answer drops the topics it has nothing of
		topics, fileLists := resp.Topics[:0], resp.files[:0]
		for ti, t := range resp.Topics {
			if len(t.Partitions) > 0 {
				topics, fileLists = append(topics, t), append(fileLists, resp.files[ti])
			}
		}
		resp.Topics, resp.files = topics, fileLists
	}
	resp.SessionID = s.sessions.end(principalOf(ctx), *fctx, answers, answered)
	return resp
}
