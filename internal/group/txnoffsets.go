package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

// Offsets committed inside a transaction (TxnOffsetCommit, KIP-98/KIP-447). They are
// written to the group's __consumer_offsets partition as a transactional batch of the
// producer, which AddOffsetsToTxn made a participant of the transaction, and held
// pending, per producer, until the transaction's marker lands on that partition: a commit
// marker makes them the group's committed offsets, an abort marker drops them. Until then
// OffsetFetch with RequireStable answers UNSTABLE_OFFSET_COMMIT for their partitions, so a
// consumer that takes over a partition does not start from offsets that may yet be
// aborted (KIP-447). A new leader rebuilds the pending offsets and their outcomes from the
// log, markers included.

// TxnCommitRequest is a TxnOffsetCommit, version differences resolved by the caller.
type TxnCommitRequest struct {
	Group         string
	ProducerID    int64
	ProducerEpoch int16
	// MemberID, InstanceID and Generation are checked as an OffsetCommit's when Generation
	// is not -1 (TxnOffsetCommit v3, KIP-447); older versions send none.
	MemberID   string
	InstanceID *string
	Generation int32
	Topics     []CommitTopic
}

// TxnCommit handles a TxnOffsetCommit. verify asks the transaction coordinator whether the
// group's partition is in the producer's transaction; it runs after the partition took a
// verification guard and before the write, without the coordinator's lock, so a marker
// that lands in between voids the guard instead of leaving the write outside any
// transaction.
func (c *Coordinator) TxnCommit(req TxnCommitRequest, verify func() *kerr.Error) CommitWait {
	c.mu.Lock()
	shard, err := c.shardLocked(req.Group)
	c.mu.Unlock()
	if err != nil {
		return settled(commitErrors(req.commit(), err))
	}
	p := c.host.OffsetsPartition(shard)
	if p == nil {
		return settled(commitErrors(req.commit(), kerr.NotCoordinator))
	}
	guard, open := p.BeginTxnVerification(req.ProducerID, req.ProducerEpoch)
	if !open {
		if err := verify(); err != nil {
			return settled(commitErrors(req.commit(), err))
		}
	}
	cfg := c.cfg()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.shardLocked(req.Group); err != nil {
		return settled(commitErrors(req.commit(), err))
	}
	now := c.now()
	g := c.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 {
			return settled(commitErrors(req.commit(), kerr.IllegalGeneration))
		}
		g = newGroup(req.Group, shard, now)
		c.groups[req.Group] = g
	}
	if req.Generation >= 0 {
		if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
			return settled(commitErrors(req.commit(), err))
		}
		if req.Generation != g.generation {
			return settled(commitErrors(req.commit(), kerr.IllegalGeneration))
		}
	}
	out, slots, recs := c.commitRecordsLocked(g, req.commit(), now, cfg.OffsetMetadataMaxBytes)
	if len(recs) == 0 {
		return settled(out)
	}
	h := recordbatch.PlainHeader(now.UnixMilli(), now.UnixMilli())
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = req.ProducerID, req.ProducerEpoch, -1
	h.Attributes |= recordbatch.AttrTransactional
	batch := encodeRecords(h, recs)
	done := make(chan *kerr.Error, 1)
	produce := func(p *partition.Partition) (partition.ProduceResult, func(context.Context) partition.ProduceResult) {
		return p.ProduceTxn(batch, -1, guard)
	}
	base := c.writeBatchLocked(shard, cfg, produce, func(err *kerr.Error) {
		if err == nil && g.state != Dead {
			pend := g.txnPending[req.ProducerID]
			if pend == nil {
				pend = map[tp]*committed{}
				g.txnPending[req.ProducerID] = pend
			}
			for _, s := range slots {
				cm := s.c
				pend[s.tp] = &cm
			}
		}
		done <- err
	})
	return c.commitWait(base, slots, out, done, txnCommitError)
}

// txnCommitError is what a producer's TxnOffsetCommit is told of a failed write: the
// partition's fencing answers are the producer's own errors.
func txnCommitError(err *kerr.Error) *kerr.Error {
	switch err {
	case kerr.InvalidProducerEpoch:
		return kerr.ProducerFenced
	case kerr.InvalidTxnState:
		return kerr.InvalidTxnState
	}
	return err
}

func (r TxnCommitRequest) commit() CommitRequest {
	return CommitRequest{Group: r.Group, MemberID: r.MemberID, InstanceID: r.InstanceID, Generation: r.Generation, RetentionMs: -1, Topics: r.Topics}
}

// CompleteTxn applies a transaction marker written on __consumer_offsets partition shard:
// the producer's pending offsets there become committed (commit) or are dropped. A marker
// that lands while the shard is loading is kept and applied once the load is done: the
// replay may have read the log before it.
func (c *Coordinator) CompleteTxn(shard int32, producerID int64, commit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || shard < 0 || shard >= c.n {
		return
	}
	switch c.shards[shard] {
	case shardLoading:
		c.lateMarkers[shard] = append(c.lateMarkers[shard], lateMarker{producerID, commit})
		return
	case shardNone:
		return // a leader of the shard will read the marker from the log
	}
	for _, g := range c.groups {
		if g.shard == shard {
			g.completeTxn(producerID, commit)
		}
	}
}

type lateMarker struct {
	producerID int64
	commit     bool
}

// completeTxn settles a producer's pending offsets of the group.
func (g *group) completeTxn(producerID int64, commit bool) {
	pend := g.txnPending[producerID]
	delete(g.txnPending, producerID)
	if !commit {
		return
	}
	for k, cm := range pend {
		cur := g.offsets[k]
		del, deleted := g.deletedAt[k]
		if (cur == nil || cur.logOffset < cm.logOffset) && (!deleted || del < cm.logOffset) {
			g.offsets[k] = cm
		}
	}
}

// unstable reports whether a transaction holds an offset of partition k pending.
func (g *group) unstable(k tp) bool {
	for _, pend := range g.txnPending {
		if _, ok := pend[k]; ok {
			return true
		}
	}
	return false
}

// pendingPartitions lists the partitions with an offset pending in a transaction.
func (g *group) pendingPartitions() map[tp]bool {
	out := map[tp]bool{}
	for _, pend := range g.txnPending {
		for k := range pend {
			out[k] = true
		}
	}
	return out
}

// applyLateMarkersLocked settles the markers that landed while shard was loading.
func (c *Coordinator) applyLateMarkersLocked(shard int32) {
	for _, m := range c.lateMarkers[shard] {
		for _, g := range c.groups {
			if g.shard == shard {
				g.completeTxn(m.producerID, m.commit)
			}
		}
	}
	delete(c.lateMarkers, shard)
}
