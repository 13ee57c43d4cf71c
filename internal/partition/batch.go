package partition

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// Produce admission of a payload's batches: which format checks a batch must pass and the
// Kafka error each failure is answered with. The format itself is recordbatch's.

// ValidationError carries the Kafka error code a bad batch is answered with.
type ValidationError struct {
	Err *kerr.Error
	Msg string
}

func (e *ValidationError) Error() string { return e.Err.Message + ": " + e.Msg }

// SplitBatches checks a produce payload, which may hold several RecordBatch v2 batches back to
// back, and returns them. A payload that fails any check is rejected whole, so a bad request
// never stores half a write. Control batches are refused (only the partition writes
// markers); transactional batches pass the format checks, and whether one is admitted is
// the produce path's decision (Produce refuses them, ProduceTxn requires them).
func SplitBatches(records []byte, maxMessageBytes int32) ([][]byte, []recordbatch.Header, error) {
	if len(records) == 0 {
		return nil, nil, &ValidationError{kerr.InvalidRecord, "empty record set"}
	}
	var batches [][]byte
	var headers []recordbatch.Header
	for rest := records; len(rest) > 0; {
		if len(rest) < recordbatch.MagicPos+1 {
			return nil, nil, &ValidationError{kerr.CorruptMessage, "truncated record batch"}
		}
		if magic := rest[recordbatch.MagicPos]; magic != recordbatch.Magic {
			return nil, nil, &ValidationError{kerr.UnsupportedForMessageFormat, "only RecordBatch v2 (magic 2) is accepted; produce with v3 or later"}
		}
		h, ok := recordbatch.ParseHeader(rest)
		if !ok {
			return nil, nil, &ValidationError{kerr.CorruptMessage, "truncated record batch header"}
		}
		size := h.Size()
		if h.Length < recordbatch.HeaderSize-recordbatch.LengthEnd || size > int64(len(rest)) {
			return nil, nil, &ValidationError{kerr.CorruptMessage, "record batch length does not match the payload"}
		}
		if maxMessageBytes >= 0 && size > int64(maxMessageBytes) {
			return nil, nil, &ValidationError{kerr.MessageTooLarge, "record batch is larger than max.message.bytes"}
		}
		batch := rest[:size]
		if !recordbatch.CRCValid(batch) {
			return nil, nil, &ValidationError{kerr.CorruptMessage, "record batch CRC32C mismatch"}
		}
		if h.LastOffsetDelta < 0 || h.NumRecords != h.LastOffsetDelta+1 {
			return nil, nil, &ValidationError{kerr.CorruptMessage, "record count does not match lastOffsetDelta"}
		}
		if h.Attributes&recordbatch.AttrControl != 0 {
			return nil, nil, &ValidationError{kerr.InvalidRecord, "clients may not produce control batches"}
		}
		if h.Codec() > recordbatch.CodecZstd {
			return nil, nil, &ValidationError{kerr.CorruptMessage, "unknown compression codec"}
		}
		batches = append(batches, batch)
		headers = append(headers, h)
		rest = rest[size:]
	}
	return batches, headers, nil
}
