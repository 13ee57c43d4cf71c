package partition

import (
	"context"
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

// The write side of transactions (DESIGN.md §10): transactional batches, admitted only once
// the partition is known to be in the producer's transaction, and the markers the
// transaction coordinator writes to end it. What the leader knows of each producer's
// transaction lives in its producer table (producers.go), rebuilt from the log when a
// replica starts leading; what read_committed needs (the last stable offset, the aborted
// transactions) is the transaction index every replica feeds from applied entries
// (txnindex.go, txnapply.go).
//
// Verification (KIP-890 part 1): a producer's first batch in a transaction may arrive after
// the coordinator ended that transaction (a request delayed in the network). Appended, it
// would open a transaction no marker ever closes, holding the last stable offset forever.
// So the Kafka layer asks BeginTxnVerification first; unless the partition already has the
// producer's transaction open at that epoch, it gets a guard, asks the coordinator whether
// the partition is in the transaction, and passes the guard to ProduceTxn. Any marker for
// the producer written meanwhile drops the guard, so a verification that raced with the
// transaction's end admits nothing.

// txnGuard is a verification guard: the value handed out, and the epoch it was asked for.
type txnGuard struct {
	guard uint64
	epoch int16
}

// maxGuards bounds the guards held for producers that verified and never produced (the
// coordinator said no, or the client went away). Past it an arbitrary one is dropped; its
// producer's batch is refused with INVALID_TXN_STATE, which aborts that transaction.
const maxGuards = 1 << 16

// BeginTxnVerification starts verifying that this partition is in producerID's
// transaction at epoch (KIP-890). already reports that the leader has that transaction
// open here, so no verification is needed; otherwise guard is the producer's guard for
// epoch (a fresh non-zero one, replacing one of another epoch), to pass to ProduceTxn once the transaction
// coordinator confirmed the partition is in the transaction. A guard is dropped by a
// marker for the producer and when leadership moves (the producer's batch is then
// refused and the client verifies again, or aborts).
func (p *Partition) BeginTxnVerification(producerID int64, epoch int16) (guard uint64, already bool) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if b := p.Boundaries(); b.IsLeader {
		// A stale table would answer already for a transaction a marker ended under an
		// earlier leader; a failed rebuild is answered by ProduceTxn, which tries again.
		_ = p.currentProducersLocked(b)
	}
	if st := p.producers[producerID]; st != nil && st.txnOpen && st.txnEpoch == epoch {
		return 0, true
	}
	if g, ok := p.guards[producerID]; ok && g.epoch == epoch {
		// Another request of the producer is verifying the same transaction (a client
		// keeps several produce requests in flight): they share the guard, so that
		// admitting one does not void the others, and a marker voids them all.
		return g.guard, false
	}
	if _, ok := p.guards[producerID]; !ok && len(p.guards) >= maxGuards {
		for id := range p.guards {
			delete(p.guards, id)
			break
		}
	}
	p.guardSeq++
	p.guards[producerID] = txnGuard{guard: p.guardSeq, epoch: epoch}
	return p.guardSeq, false
}

// ProduceTxn is Produce for a transactional batch (which it requires): the same
// validation, window, admission and sequence rules, and the same acks. Under appendMu the
// batch is admitted only if the leader has the producer's transaction open here at the
// batch's epoch, or guard is the one BeginTxnVerification gave the producer for that
// epoch; else INVALID_TXN_STATE and nothing is stored. A batch at an epoch older than the
// producer's is refused with INVALID_PRODUCER_EPOCH. An admitted batch opens (or
// continues) the producer's transaction and uses the guard up.
func (p *Partition) ProduceTxn(records []byte, acks int16, guard uint64) (ProduceResult, func(ctx context.Context) ProduceResult) {
	batch, h, rejected := validateProduce(p.cfg.Load(), records, true)
	if rejected != nil {
		return *rejected, nil
	}
	return p.appendBatch(batch, h, acks, txnAdmit{guard: guard})
}

// txnAdmit admits a transactional batch.
type txnAdmit struct{ guard uint64 }

func (a txnAdmit) decideLocked(p *Partition, h recordbatch.Header) admission {
	st := p.producers[h.ProducerID]
	if h.BaseSequence < 0 {
		// A batch the group coordinator writes for a TxnOffsetCommit has no sequence (as in
		// Kafka, the coordinator is its only writer and never retries it as a duplicate):
		// only the epoch fences it. The Kafka layer refuses such a batch from a client.
		if st != nil && h.ProducerEpoch < st.epoch {
			return refuse(kerr.InvalidProducerEpoch, "producer epoch is older than the current one")
		}
	} else {
		dupOf, dup, verr := p.checkSequence(h)
		switch {
		case verr != nil:
			return refuse(verr.Err, verr.Msg)
		case dup:
			// The original was admitted into the transaction: its retry is answered with it.
			return admission{duplicate: true, dupOf: dupOf}
		}
	}
	open := st != nil && st.txnOpen && st.txnEpoch == h.ProducerEpoch
	g, ok := p.guards[h.ProducerID]
	verified := ok && a.guard != 0 && g.guard == a.guard && g.epoch == h.ProducerEpoch
	if !open && !verified {
		return refuse(kerr.InvalidTxnState, "the partition was not added to the producer's transaction")
	}
	return admission{}
}

func (txnAdmit) admittedLocked(p *Partition, h recordbatch.Header, prop *raft.Proposal) {
	p.recordSequence(h, 0, prop)
}

// WriteMarker appends the marker that ends producerID's transaction on this partition
// (commit or abort), as the transaction coordinator at coordinatorEpoch asks, and returns
// once it is acknowledged at acks=all strength: committed (or majority replicated under
// write caching) and held by min.insync.replicas replicas, which must be in sync before
// it is appended. The marker is a control batch (producer id and epoch, base sequence -1,
// one record: key version 0 and the type, value version 0 and the coordinator epoch) and
// takes an offset like any batch. Under appendMu on the leader:
//   - an epoch older than the producer's is INVALID_PRODUCER_EPOCH;
//   - a coordinator epoch older than that of the producer's last marker here is
//     TRANSACTION_COORDINATOR_FENCED;
//   - with no transaction open, a marker of the same epoch and outcome as the producer's
//     last one is the coordinator's retry (it resends markers after a leader change): it
//     is answered with the first one's offset, once that is acknowledged, and appends
//     nothing;
//   - otherwise the marker is appended, even with no transaction open here (a partition
//     added to the transaction that got no data), as Kafka does.
//
// An appended marker closes the producer's transaction in the leader's table, drops its
// verification guard and moves it to the marker's epoch; it takes no sequence and leaves
// the sequence window of that epoch alone. NOT_LEADER_OR_FOLLOWER on a replica that does
// not lead; REQUEST_TIMED_OUT if ctx ends first.
func (p *Partition) WriteMarker(ctx context.Context, producerID int64, epoch int16, commit bool, coordinatorEpoch int32) ProduceResult {
	if producerID < 0 || epoch < 0 {
		return failed(kerr.InvalidRequest, "a transaction marker needs a producer id and epoch")
	}
	now := p.now().UnixMilli()
	mh := recordbatch.PlainHeader(now, now)
	mh.ProducerID, mh.ProducerEpoch = producerID, epoch
	typ := recordbatch.ControlAbort
	if commit {
		typ = recordbatch.ControlCommit
	}
	batch := recordbatch.EncodeControl(mh, typ, coordinatorEpoch)
	h, _ := recordbatch.ParseHeader(batch)
	res, wait := p.appendBatch(batch, h, -1, markerAdmit{commit: commit, coordEpoch: coordinatorEpoch})
	if wait != nil {
		res = wait(ctx)
	}
	return res
}

// markerAdmit admits a transaction marker: no sequence rules, the coordinator's fencing.
type markerAdmit struct {
	commit     bool
	coordEpoch int32
}

func (a markerAdmit) decideLocked(p *Partition, h recordbatch.Header) admission {
	st := p.producers[h.ProducerID]
	switch {
	case st == nil:
		return admission{}
	case h.ProducerEpoch < st.epoch:
		return refuse(kerr.InvalidProducerEpoch, "the marker's producer epoch is older than the producer's")
	case a.coordEpoch < st.coordEpoch:
		return refuse(kerr.TransactionCoordinatorFenced, "the marker's coordinator epoch is older than that of the producer's last marker")
	case !st.txnOpen && st.marker.records > 0 && st.markerEpoch == h.ProducerEpoch && st.markerCommit == a.commit:
		st.marker.settle()
		return admission{duplicate: true, dupOf: st.marker}
	}
	return admission{}
}

func (a markerAdmit) admittedLocked(p *Partition, h recordbatch.Header, prop *raft.Proposal) {
	p.recordMarker(h, a.commit, a.coordEpoch, 0, prop)
}

// parseMarker reads a stored transaction marker: whether it commits, and the coordinator
// epoch in its value (-1 if the value does not hold one). ok is false for a control batch
// that is no commit or abort marker.
func parseMarker(batch []byte) (commit bool, coordEpoch int32, ok bool) {
	typ, ok := recordbatch.ParseControl(batch)
	if !ok || (typ != recordbatch.ControlAbort && typ != recordbatch.ControlCommit) {
		return false, -1, false
	}
	coordEpoch = -1
	recs, _, err := recordbatch.DecodeRecords(batch, nil)
	if err == nil && len(recs) == 1 && len(recs[0].Value) >= 6 && binary.BigEndian.Uint16(recs[0].Value) == 0 {
		coordEpoch = int32(binary.BigEndian.Uint32(recs[0].Value[2:]))
	}
	return typ == recordbatch.ControlCommit, coordEpoch, true
}

// oldestOpenTxn is the first offset of the oldest transaction open on this replica, as
// its transaction index knows it: the log start may not pass it.
func (p *Partition) oldestOpenTxn() (int64, bool) {
	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	first, ok := int64(0), false
	for _, t := range p.txns.open {
		if !ok || t.first < first {
			first, ok = t.first, true
		}
	}
	return first, ok
}

// indexEndingBy is the last Raft index, at or below maxIndex, whose entry ends at or below
// offset: retention may drop segments up to it and no further.
func (p *Partition) indexEndingBy(offset int64, maxIndex uint64) uint64 {
	lo := p.log.FirstIndex()
	if lo > 0 {
		lo-- // its end offset is the first segment's base, at or below the log start
	}
	hi := max(lo, maxIndex)
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if end, err := p.log.EndOffsetAt(mid); err == nil && end <= offset {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}
