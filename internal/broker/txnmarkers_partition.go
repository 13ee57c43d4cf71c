package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/partition"
)

// writeMarkerOn writes m on p, which leads. The partition's marker write arrives with the
// transactional write side; until then no coordinator sends markers.
func writeMarkerOn(_ context.Context, _ *partition.Partition, _ TxnMarker) partition.ProduceResult {
	return produceFailed(kerr.InvalidRequest, "transactions are not supported yet")
}

// beginTxnVerification records a verification guard on p for the producer, unless it has
// a transaction open there already (open).
func beginTxnVerification(_ *partition.Partition, _ int64, _ int16) (guard uint64, open bool) {
	return 0, false
}

// produceTxnOn appends a transactional batch on p, which leads, if the producer's
// transaction is open there or guard still stands.
func produceTxnOn(_ *partition.Partition, _ []byte, _ int16, _ uint64) (partition.ProduceResult, func(context.Context) partition.ProduceResult) {
	return produceFailed(kerr.InvalidRecord, "transactions are not supported yet"), nil
}
