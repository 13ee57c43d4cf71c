package partition

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

// producerWindow is how many recent batches per producer are remembered for dedupe: Kafka
// clients keep at most five requests in flight per partition when idempotent.
const producerWindow = 5

type seqBatch struct {
	firstSeq, lastSeq int32
	baseOffset        int64
	records           int32
	// prop is the batch's proposal while its append is not yet known to have happened
	// (baseOffset is then unknown); settle fills baseOffset in once it has.
	prop *raft.Proposal
}

// settle records the base offset of an appended pending batch; it reports whether the
// batch's offset is known.
func (b *seqBatch) settle() bool {
	if b.prop == nil {
		return true
	}
	if !b.prop.Appended() {
		return false
	}
	b.baseOffset, b.prop = b.prop.BaseOffset(), nil
	return true
}

// producerState is what the leader knows of one producer, rebuilt from the log whenever a
// replica starts leading (rebuildProducers), so every field is one the log's batches
// determine: a replica's table is the same whichever replica wrote the batches.
type producerState struct {
	epoch   int16      // the producer's newest epoch: of its last batch or marker
	batches []seqBatch // oldest first, at most producerWindow, all of epoch
	// txnOpen: a transactional batch of this producer (at txnEpoch, the newest one's) is
	// stored with no marker after it.
	txnOpen  bool
	txnEpoch int16
	// coordEpoch is the coordinator epoch of the producer's last marker (-1: none): a
	// marker from an older coordinator is fenced.
	coordEpoch int32
	// marker is the producer's last marker (records 0: none), to answer the coordinator's
	// retry of it; markerEpoch and markerCommit are its epoch and outcome.
	marker       seqBatch
	markerEpoch  int16
	markerCommit bool
}

// producerLocked is the producer's state, created if it has none, at epoch: a newer (or
// other) epoch than the one it had starts a new sequence window, as Kafka does, since a
// new epoch's sequences start at 0. Under appendMu.
func (p *Partition) producerLocked(id int64, epoch int16) *producerState {
	st := p.producers[id]
	if st == nil {
		st = &producerState{epoch: epoch, coordEpoch: -1}
		p.producers[id] = st
	} else if st.epoch != epoch {
		st.epoch, st.batches = epoch, nil
	}
	return st
}

// checkSequence applies Kafka's idempotent-producer rules to a batch, under appendMu. A
// retried batch is reported as a duplicate with a copy of the original's entry (whose
// proposal may still be pending); a gap is refused.
func (p *Partition) checkSequence(h recordbatch.Header) (dupOf seqBatch, dup bool, err *ValidationError) {
	if h.ProducerID < 0 {
		return seqBatch{}, false, nil
	}
	st := p.producers[h.ProducerID]
	switch {
	case st == nil:
		if h.BaseSequence != 0 {
			return seqBatch{}, false, &ValidationError{kerr.UnknownProducerID, "no state for this producer id; its batches may have been removed by retention"}
		}
		return seqBatch{}, false, nil
	case h.ProducerEpoch < st.epoch:
		return seqBatch{}, false, &ValidationError{kerr.InvalidProducerEpoch, "producer epoch is older than the current one"}
	case h.ProducerEpoch > st.epoch:
		if h.BaseSequence != 0 {
			return seqBatch{}, false, &ValidationError{kerr.OutOfOrderSequenceNumber, "a new producer epoch must start at sequence 0"}
		}
		return seqBatch{}, false, nil
	}
	if len(st.batches) == 0 && h.BaseSequence != 0 {
		// Only a marker leaves a producer with an epoch and no batch: one that bumped its
		// epoch starts a new sequence.
		return seqBatch{}, false, &ValidationError{kerr.OutOfOrderSequenceNumber, "a new producer epoch must start at sequence 0"}
	}
	for i := range st.batches {
		b := &st.batches[i]
		b.settle()
		if b.firstSeq == h.BaseSequence && b.lastSeq == h.LastSequence() {
			return *b, true, nil
		}
	}
	if len(st.batches) > 0 {
		last := st.batches[len(st.batches)-1].lastSeq
		next := last + 1
		if last == 0x7fffffff {
			next = 0
		}
		if h.BaseSequence != next {
			return seqBatch{}, false, &ValidationError{kerr.OutOfOrderSequenceNumber, "sequence gap: the batch does not follow the producer's last sequence"}
		}
	}
	return seqBatch{}, false, nil
}

// recordSequence remembers a batch for dedupe, under appendMu: appended at base, or still
// pending as prop. A transactional batch opens (or continues) the producer's transaction
// here, which makes its verification guard needless.
func (p *Partition) recordSequence(h recordbatch.Header, base int64, prop *raft.Proposal) {
	if h.ProducerID < 0 {
		return
	}
	st := p.producerLocked(h.ProducerID, h.ProducerEpoch)
	if h.Attributes&recordbatch.AttrTransactional != 0 {
		st.txnOpen, st.txnEpoch = true, h.ProducerEpoch
		delete(p.guards, h.ProducerID)
	}
	if h.BaseSequence < 0 {
		return // written by a coordinator without a sequence (txnAdmit): nothing to dedupe
	}
	if len(st.batches) == producerWindow {
		copy(st.batches, st.batches[1:])
		st.batches = st.batches[:producerWindow-1]
	}
	st.batches = append(st.batches, seqBatch{firstSeq: h.BaseSequence, lastSeq: h.LastSequence(), baseOffset: base, records: h.Records(), prop: prop})
}

// recordMarker records a transaction marker of h's producer, under appendMu: appended at
// base, or still pending as prop. It ends the producer's transaction here, moves the
// producer to the marker's epoch and its coordinator epoch, and drops its guard. The
// sequence window is left alone unless the epoch moved (a marker has no sequence).
func (p *Partition) recordMarker(h recordbatch.Header, commit bool, coordEpoch int32, base int64, prop *raft.Proposal) {
	st := p.producerLocked(h.ProducerID, h.ProducerEpoch)
	st.txnOpen = false
	st.coordEpoch = coordEpoch
	st.marker = seqBatch{firstSeq: -1, lastSeq: -1, baseOffset: base, records: 1, prop: prop}
	st.markerEpoch, st.markerCommit = h.ProducerEpoch, commit
	delete(p.guards, h.ProducerID)
}

// rebuildProducers replays the log so that a restarted broker, or a replica that starts
// leading, dedupes retries of batches acknowledged before, and knows each producer's open
// transaction, last marker and coordinator epoch: the same state the leader that wrote
// them had, since it is all read from the batches. The log holds every open
// transaction's batches, since the log start never passes an open transaction's first
// offset (read.go).
func (p *Partition) rebuildProducers() error {
	return p.log.ScanBatches(func(base int64, batch []byte) error {
		h, ok := recordbatch.ParseHeader(batch)
		if !ok || h.ProducerID < 0 {
			return nil
		}
		if h.Attributes&recordbatch.AttrControl == 0 {
			p.recordSequence(h, base, nil)
		} else if commit, coordEpoch, ok := parseMarker(batch); ok {
			p.recordMarker(h, commit, coordEpoch, base, nil)
		}
		return nil
	})
}

// pruneProducers forgets producers whose last remembered batch and marker end at or below
// start, under appendMu: what a rebuild from the log would no longer find. Their next
// batch with a non-zero sequence gets UNKNOWN_PRODUCER_ID, which clients answer by
// resetting their sequence. A producer with a transaction open is kept: its batches are
// still stored.
func (p *Partition) pruneProducers(start int64) {
	for id, st := range p.producers {
		if st.txnOpen {
			continue
		}
		end := int64(-1)
		if n := len(st.batches); n > 0 {
			if !st.batches[n-1].settle() {
				continue // its newest batch is being appended now
			}
			end = st.batches[n-1].baseOffset + int64(st.batches[n-1].records)
		}
		if st.marker.records > 0 {
			if !st.marker.settle() {
				continue
			}
			end = max(end, st.marker.baseOffset+1)
		}
		if end <= start {
			delete(p.producers, id)
		}
	}
}
