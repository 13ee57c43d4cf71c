package partition

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// producerWindow is how many recent batches per producer are remembered for dedupe: Kafka
// clients keep at most five requests in flight per partition when idempotent.
const producerWindow = 5

type seqBatch struct {
	firstSeq, lastSeq int32
	baseOffset        int64
	records           int32
}

type producerState struct {
	epoch   int16
	batches []seqBatch // oldest first, at most producerWindow
}

// checkSequence applies Kafka's idempotent-producer rules to a batch, under appendMu. A
// retried batch is reported as a duplicate with its original offset; a gap is refused.
func (p *Partition) checkSequence(h BatchHeader) (base int64, records int32, dup bool, err *ValidationError) {
	if h.ProducerID < 0 {
		return 0, 0, false, nil
	}
	st := p.producers[h.ProducerID]
	switch {
	case st == nil:
		if h.BaseSequence != 0 {
			return 0, 0, false, &ValidationError{kerr.UnknownProducerID, "no state for this producer id; its batches may have been removed by retention"}
		}
		return 0, 0, false, nil
	case h.ProducerEpoch < st.epoch:
		return 0, 0, false, &ValidationError{kerr.InvalidProducerEpoch, "producer epoch is older than the current one"}
	case h.ProducerEpoch > st.epoch:
		if h.BaseSequence != 0 {
			return 0, 0, false, &ValidationError{kerr.OutOfOrderSequenceNumber, "a new producer epoch must start at sequence 0"}
		}
		return 0, 0, false, nil
	}
	for _, b := range st.batches {
		if b.firstSeq == h.BaseSequence && b.lastSeq == h.LastSequence() {
			return b.baseOffset, b.records, true, nil
		}
	}
	if len(st.batches) > 0 {
		last := st.batches[len(st.batches)-1].lastSeq
		next := last + 1
		if last == 0x7fffffff {
			next = 0
		}
		if h.BaseSequence != next {
			return 0, 0, false, &ValidationError{kerr.OutOfOrderSequenceNumber, "sequence gap: the batch does not follow the producer's last sequence"}
		}
	}
	return 0, 0, false, nil
}

// recordSequence remembers an appended batch for dedupe, under appendMu.
func (p *Partition) recordSequence(h BatchHeader, base int64) {
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
	st.batches = append(st.batches, seqBatch{firstSeq: h.BaseSequence, lastSeq: h.LastSequence(), baseOffset: base, records: h.Records()})
}

// rebuildProducers replays the log so that a restarted broker dedupes retries of batches it
// acknowledged before the restart.
func (p *Partition) rebuildProducers() error {
	return p.log.ScanBatches(func(base int64, batch []byte) error {
		h, ok := ParseBatchHeader(batch)
		if !ok || h.Attributes&attrControl != 0 {
			return nil
		}
		p.recordSequence(h, base)
		return nil
	})
}

// pruneProducers forgets producers whose last remembered batch ends at or below start,
// under appendMu. Their next batch with a non-zero sequence gets UNKNOWN_PRODUCER_ID, which
// clients answer by resetting their sequence.
func (p *Partition) pruneProducers(start int64) {
	for id, st := range p.producers {
		if n := len(st.batches); n == 0 || st.batches[n-1].baseOffset+int64(st.batches[n-1].records) <= start {
			delete(p.producers, id)
		}
	}
}
