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
