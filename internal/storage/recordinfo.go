package storage

// What the produce path and ListOffsets need to know about the records inside a batch,
// decoded with the same checks compaction uses.

// attrLogAppendTime marks a batch whose records all carry the batch's MaxTimestamp.
const (
	attrLogAppendTime      = 0x08
	batchFirstTimestampPos = 27 // int64
)

// CheckRecords decodes every record of a RecordBatch v2 (decompressing it if needed) and
// returns an error wrapping ErrInvalidBatch if any is malformed, or ErrNullKey if
// requireKeys is set and a record has a null key. The produce path runs it so that a batch
// whose records no consumer could read is refused rather than stored.
func CheckRecords(batch []byte, requireKeys bool) error {
	recs, _, err := decodeBatchRecords(batch, nil)
	if err != nil {
		return err
	}
	if requireKeys {
		for i := range recs {
			if recs[i].nullKey {
				return ErrNullKey
			}
		}
	}
	return nil
}

// RecordTime is one record's absolute offset and timestamp.
type RecordTime struct {
	Offset    int64
	Timestamp int64
}

// RecordTimes decodes a stored batch and returns each record's offset and timestamp in
// order, so that ListOffsets can answer per record rather than per batch.
func RecordTimes(batch []byte) ([]RecordTime, error) {
	recs, _, err := decodeBatchRecords(batch, nil)
	if err != nil {
		return nil, err
	}
	base := batchBase(batch)
	first := int64(be.Uint64(batch[batchFirstTimestampPos:]))
	maxTS := int64(be.Uint64(batch[batchMaxTimestampPos:]))
	logAppend := be.Uint16(batch[batchAttributesPos:])&attrLogAppendTime != 0
	out := make([]RecordTime, len(recs))
	for i, r := range recs {
		ts := first + r.timestampDelta
		if logAppend {
			ts = maxTS
		}
		out[i] = RecordTime{Offset: base + int64(r.offsetDelta), Timestamp: ts}
	}
	return out, nil
}
