package partition

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// CheckEpoch answers NOT_LEADER_OR_FOLLOWER on a replica that does not lead, and fences a
// client's view of the leader epoch (KIP-320): -1 skips the epoch check.
func (p *Partition) CheckEpoch(currentLeaderEpoch int32) *kerr.Error {
	return leaderCheck(p.Boundaries(), currentLeaderEpoch)
}

func checkEpoch(epoch, currentLeaderEpoch int32) *kerr.Error {
	switch {
	case currentLeaderEpoch < 0 || currentLeaderEpoch == epoch:
		return nil
	case currentLeaderEpoch < epoch:
		return kerr.FencedLeaderEpoch
	default:
		return kerr.UnknownLeaderEpoch
	}
}

// leaderCheck answers reads on a replica that does not lead, or not yet (Boundaries.Serving:
// a new leader for the round trip its first entry takes to commit; clients retry
// NOT_LEADER_OR_FOLLOWER at once, as after any election), and fences stale epochs.
func leaderCheck(b Boundaries, currentLeaderEpoch int32) *kerr.Error {
	if !b.IsLeader || !b.Serving {
		return kerr.NotLeaderForPartition
	}
	return checkEpoch(b.LeaderEpoch, currentLeaderEpoch)
}

// Special ListOffsets timestamps.
const (
	ListLatest       = -1
	ListEarliest     = -2
	ListMaxTimestamp = -3
)

// ListOffset answers ListOffsets for one partition: the offset and the timestamp found.
// read_committed (IsolationLevel 1) answers below the last stable offset only: latest is
// the last stable offset, and a lookup that finds a record at or past it finds nothing,
// as Kafka does; earliest is the log start either way.
func (p *Partition) ListOffset(timestamp int64, readCommitted bool) (offset int64, ts int64, err *kerr.Error) {
	b := p.Boundaries()
	if err := leaderCheck(b, -1); err != nil {
		return -1, -1, err
	}
	return p.listOffset(b, timestamp, readCommitted)
}

// listOffset answers ListOffsets from b, whose last visible (last stable, for
// read_committed) bounds every answer.
func (p *Partition) listOffset(b Boundaries, timestamp int64, readCommitted bool) (offset int64, ts int64, err *kerr.Error) {
	bound := b.LastVisible
	if readCommitted {
		bound = b.LastStable
	}
	switch timestamp {
	case ListLatest:
		return bound, -1, nil
	case ListEarliest:
		return b.LogStart, -1, nil
	case ListMaxTimestamp:
		t, off := p.log.MaxTimestamp()
		if off < 0 || off >= bound {
			return -1, -1, nil
		}
		// The log knows the batch; Kafka answers with the first record holding the maximum.
		return p.recordAt(off, b.LogStart, bound, func(r recordbatch.RecordTime) bool { return r.Timestamp == t }, off, t)
	}
	if timestamp < 0 {
		return -1, -1, kerr.InvalidRequest
	}
	off, t, ok := p.log.OffsetForTimestamp(timestamp)
	if !ok || off >= bound {
		return -1, -1, nil
	}
	// The log finds the first batch whose largest timestamp reaches the one asked for; the
	// answer is the first record inside it that does.
	off, t, err = p.recordAt(max(off, b.LogStart), b.LogStart, bound, func(r recordbatch.RecordTime) bool { return r.Timestamp >= timestamp }, max(off, b.LogStart), t)
	if err != nil || off >= bound {
		return -1, -1, err
	}
	return off, t, nil
}

// recordAt decodes the batch holding offset (below upTo) and returns the first record at
// or after logStart that match accepts; fallbackOffset and fallbackTS answer when the
// batch cannot be decoded (it was checked at produce, so only damage gets there).
func (p *Partition) recordAt(offset, logStart, upTo int64, match func(recordbatch.RecordTime) bool, fallbackOffset, fallbackTS int64) (int64, int64, *kerr.Error) {
	raw, err := p.log.ReadBatches(offset, 1, upTo)
	if err != nil || len(raw) == 0 {
		return fallbackOffset, fallbackTS, nil
	}
	h, ok := recordbatch.ParseHeader(raw)
	if !ok || h.Size() < recordbatch.HeaderSize || h.Size() > int64(len(raw)) {
		return fallbackOffset, fallbackTS, nil
	}
	recs, derr := recordbatch.RecordTimes(raw[:h.Size()])
	if derr != nil {
		p.lg.Warn("ListOffsets could not decode a stored batch", "offset", h.BaseOffset, "err", derr)
		return fallbackOffset, fallbackTS, nil
	}
	for _, r := range recs {
		if r.Offset >= logStart && match(r) {
			return r.Offset, r.Timestamp, nil
		}
	}
	return fallbackOffset, fallbackTS, nil
}

// EpochEndOffset answers OffsetForLeaderEpoch: the largest epoch at or below the one asked
// for, and the offset where it ended. (-1, -1) means no such epoch.
func (p *Partition) EpochEndOffset(epoch int32) (int32, int64) {
	b := p.Boundaries()
	if epoch > b.LeaderEpoch {
		return -1, -1
	}
	if epoch == b.LeaderEpoch {
		return b.LeaderEpoch, b.LogEnd
	}
	found, end, ok := p.log.EpochEndOffset(uint64(epoch))
	if !ok {
		return -1, -1
	}
	return int32(found), end
}

// LeaderEpoch is the partition's current leader epoch (the Raft term).
func (p *Partition) LeaderEpoch() int32 { return p.Boundaries().LeaderEpoch }

// IsLeader reports whether this replica leads the partition.
func (p *Partition) IsLeader() bool { return p.Boundaries().IsLeader }

// DeleteRecords advances the log start offset; -1 means the high watermark. It returns the
// low watermark reached, which is below the offset asked for when a transaction open on
// the partition starts below it: the log start never passes an open transaction's first
// offset (its batches must stay, for the transaction index of every replica, and of one
// rebuilt from the log, to agree on it). The caller answers with the offset reached, as
// Kafka answers with the low watermark.
func (p *Partition) DeleteRecords(offset int64) (int64, *kerr.Error) {
	b := p.Boundaries()
	if !b.IsLeader {
		return -1, kerr.NotLeaderForPartition
	}
	if offset == -1 {
		offset = b.LastVisible
	}
	if offset < 0 || offset > b.LastVisible {
		return -1, kerr.OffsetOutOfRange
	}
	// Under write caching the high watermark can be ahead of what is committed and
	// applied here; the log start may not pass that (raft still reads those entries).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.waitFor(ctx, func(*Boundaries) bool { return p.endOffset(p.applied) >= offset }); err != nil {
		return -1, kerr.RequestTimedOut
	}
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if b = p.Boundaries(); !b.IsLeader {
		return -1, kerr.NotLeaderForPartition
	}
	// Everything below offset is applied, so the index knows every transaction open there.
	if first, ok := p.oldestOpenTxn(); ok {
		offset = min(offset, first)
	}
	if offset <= b.LogStart {
		return b.LogStart, nil
	}
	if err := p.log.AdvanceLogStart(offset); err != nil {
		p.lg.Error("advancing log start failed", "err", err)
		return -1, kerr.KafkaStorageError
	}
	p.setLogStart(p.log.LogStartOffset())
	return p.log.LogStartOffset(), nil
}

// FollowLogStart moves a follower's log start up to the leader's, so DeleteRecords and
// the leader's retention hold on every replica (deleted records do not come back after a
// failover). It never goes past what this replica knows committed, nor an open
// transaction's first offset (the leader's start does not either: this only keeps the
// rule on a replica whose index lags); the next call (the leader repeats it) goes further.
func (p *Partition) FollowLogStart(start int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	b := p.Boundaries()
	start = min(start, b.Committed, p.appliedOffset())
	if first, ok := p.oldestOpenTxn(); ok {
		start = min(start, first)
	}
	if b.IsLeader || start <= b.LogStart {
		return nil
	}
	if err := p.log.AdvanceLogStart(start); err != nil {
		return err
	}
	p.setLogStart(p.log.LogStartOffset())
	return nil
}

// EnforceRetention deletes old segments by the topic's retention.ms and retention.bytes,
// when its cleanup.policy includes delete. It deletes no segment holding entries this
// replica has not applied, nor any at or past the first offset of an open transaction:
// retention waits for the transaction to end (as Kafka's does, at the last stable offset).
func (p *Partition) EnforceRetention() error {
	cfg := p.cfg.Load()
	if !cfg.Deletes() || (cfg.RetentionMs < 0 && cfg.RetentionBytes < 0) {
		return nil
	}
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	upTo := p.applied
	p.mu.Unlock()
	if first, ok := p.oldestOpenTxn(); ok {
		upTo = p.indexEndingBy(first, upTo)
	}
	start, err := p.log.EnforceRetentionUpTo(cfg.RetentionMs, cfg.RetentionBytes, upTo)
	if err != nil {
		return err
	}
	p.setLogStart(start)
	return nil
}

// setLogStart publishes a new log start, under appendMu. Producers whose every remembered
// batch now lies below it are forgotten, as Kafka does once their data is gone, so the
// table does not grow with producers that no longer have anything in the log.
func (p *Partition) setLogStart(start int64) {
	p.pruneProducers(start)
	p.trimTxns(start)
	p.mu.Lock()
	defer p.mu.Unlock()
	if start > p.bounds.LogStart {
		p.advanceLocked(func(b *Boundaries) { b.LogStart = start })
	}
}

// SizeBytes is the partition's size on disk.
func (p *Partition) SizeBytes() int64 { return p.log.SizeBytes() }
