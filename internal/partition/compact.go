package partition

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/recordbatch"
	"github.com/cairn-io/cairn/internal/storage"
)

// Compact runs one compaction round over the partition's log when the topic's
// cleanup.policy includes compact, and does nothing otherwise: for every key only its
// latest record is kept, and tombstones go delete.retention.ms after their segment was
// first compacted (see storage.Log.Compact). Only closed segments below the committed
// offset take part, so nothing Raft may still truncate is compacted. Offsets, batch
// headers and so idempotent-producer state are unchanged. Transactions: compaction keeps
// every control batch and every transactional batch whole (storage does not look inside
// them), so a marker never goes while its transaction's data is stored, an open
// transaction keeps its first batch, and the transaction index rebuilt from a compacted
// log is the one it was. The cost is that aborted records are not dropped by compaction
// (consumers skip them by the aborted index), which is simple and never wrong. It runs
// alongside produce and fetch; the broker calls it on the retention schedule.
func (p *Partition) Compact() error {
	cfg := p.cfg.Load()
	if !cfg.Compacts() {
		return nil
	}
	st, err := p.log.Compact(storage.CompactOptions{DeleteRetentionMs: cfg.DeleteRetentionMs, UpTo: p.Boundaries().Committed})
	if errors.Is(err, storage.ErrClosed) {
		return nil // the partition is closing
	}
	if err != nil {
		return err
	}
	if st.SegmentsRewritten > 0 {
		p.lg.Debug("compacted", "segments", st.SegmentsRewritten, "records_removed", st.RecordsRemoved,
			"tombstones_removed", st.TombstonesRemoved, "bytes_before", st.BytesBefore, "bytes_after", st.BytesAfter)
	}
	if st.UndecodableBatches > 0 {
		p.lg.Warn("compaction kept batches whose records it could not decode", "batches", st.UndecodableBatches)
	}
	return nil
}

// checkRecords decodes the batch's records (decompressing them if needed) and refuses a
// batch whose records no consumer could read, and, for a topic whose cleanup.policy
// includes compact, a batch holding a record without a key (Kafka answers INVALID_RECORD
// too).
func checkRecords(cfg *config.TopicConfig, batch []byte) *ValidationError {
	switch err := recordbatch.CheckRecords(batch, cfg.Compacts()); {
	case err == nil:
		return nil
	case errors.Is(err, recordbatch.ErrNullKey):
		return &ValidationError{kerr.InvalidRecord, "compacted topics require a key on every record"}
	default:
		return &ValidationError{kerr.CorruptMessage, "the batch's records cannot be decoded: " + err.Error()}
	}
}
