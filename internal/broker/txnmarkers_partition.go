package broker

import (
	"context"

	"github.com/cairn-io/cairn/internal/partition"
)

// writeMarkerOn writes m on p, which leads.
func writeMarkerOn(ctx context.Context, p *partition.Partition, m TxnMarker) partition.ProduceResult {
	return p.WriteMarker(ctx, m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch)
}

// beginTxnVerification records a verification guard on p for the producer, unless it has
// a transaction open there already (open).
func beginTxnVerification(p *partition.Partition, producerID int64, epoch int16) (guard uint64, open bool) {
	return p.BeginTxnVerification(producerID, epoch)
}

// produceTxnOn appends a transactional batch on p, which leads, if the producer's
// transaction is open there or guard still stands.
func produceTxnOn(p *partition.Partition, records []byte, acks int16, guard uint64) (partition.ProduceResult, func(context.Context) partition.ProduceResult) {
	return p.ProduceTxn(records, acks, guard)
}
