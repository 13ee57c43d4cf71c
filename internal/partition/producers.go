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

type producerState struct {
	epoch   int16
	batches []seqBatch // oldest first, at most producerWindow
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
// pending as prop.
func (p *Partition) recordSequence(h recordbatch.Header, base int64, prop *raft.Proposal) {
	if h.ProducerID < 0 {
		return
	}
	st := p.producers[h.ProducerID]
	if st == nil || h.ProducerEpoch != st.epoch {
		st = &producerState{epoch: h.ProducerEpoch}
		p.producers[h.ProducerID] = st
	}
	if len(st.batches) == producerWindow {
		copy(st.batches, st.batches[1:])
		st.batches = st.batches[:producerWindow-1]
	}
	st.batches = append(st.batches, seqBatch{firstSeq: h.BaseSequence, lastSeq: h.LastSequence(), baseOffset: base, records: h.Records(), prop: prop})
}

// rebuildProducers replays the log so that a restarted broker dedupes retries of batches it
// acknowledged before the restart.
func (p *Partition) rebuildProducers() error {
	return p.log.ScanBatches(func(base int64, batch []byte) error {
		h, ok := recordbatch.ParseHeader(batch)
		if !ok || h.Attributes&recordbatch.AttrControl != 0 {
			return nil
		}
		p.recordSequence(h, base, nil)
		return nil
	})
}

// pruneProducers forgets producers whose last remembered batch ends at or below start,
// under appendMu. Their next batch with a non-zero sequence gets UNKNOWN_PRODUCER_ID, which
// clients answer by resetting their sequence.
func (p *Partition) pruneProducers(start int64) {
	for id, st := range p.producers {
		n := len(st.batches)
		if n > 0 && !st.batches[n-1].settle() {
			continue // its newest batch is being appended now
		}
		if n == 0 || st.batches[n-1].baseOffset+int64(st.batches[n-1].records) <= start {
			delete(p.producers, id)
		}
	}
}
