package partition

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ProducerInfo is one producer the leader knows of on the partition, for
// DescribeProducers (kafka-transactions.sh describe-producers, find-hanging).
type ProducerInfo struct {
	ProducerID    int64
	ProducerEpoch int16
	// LastSequence is the last sequence of its newest stored batch, -1 when none is known.
	LastSequence int32
	// CoordinatorEpoch is that of its last marker here, -1 when none.
	CoordinatorEpoch int32
	// TxnStartOffset is the first offset of its open transaction here, -1 when none.
	TxnStartOffset int64
}

// Producers lists the producers the leader's table holds, by producer id. Only the
// leader keeps the table: a follower answers NOT_LEADER_OR_FOLLOWER, as Kafka's
// DescribeProducers does.
func (p *Partition) Producers() ([]ProducerInfo, *kerr.Error) {
	open := map[int64]int64{}
	for _, t := range p.OpenTxns() {
		open[t.ProducerID] = t.FirstOffset
	}
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	b := p.Boundaries()
	if !b.IsLeader {
		return nil, kerr.NotLeaderForPartition
	}
	if err := p.currentProducersLocked(b); err != nil {
		return nil, kerr.KafkaStorageError
	}
	out := make([]ProducerInfo, 0, len(p.producers))
	for id, st := range p.producers {
		info := ProducerInfo{ProducerID: id, ProducerEpoch: st.epoch, LastSequence: -1, CoordinatorEpoch: st.coordEpoch, TxnStartOffset: -1}
		if n := len(st.batches); n > 0 {
			info.LastSequence = st.batches[n-1].lastSeq
		}
		if first, ok := open[id]; ok && st.txnOpen {
			info.TxnStartOffset = first
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b ProducerInfo) int {
		switch {
		case a.ProducerID < b.ProducerID:
			return -1
		case a.ProducerID > b.ProducerID:
			return 1
		}
		return 0
	})
	return out, nil
}
