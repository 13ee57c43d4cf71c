package recordbatch

import (
	"errors"
	"fmt"
)

// ErrTruncated is wrapped by WalkRecords for a batch cut short.
var ErrTruncated = errors.New("truncated")

// WalkRecords decodes raw batches as a partition Fetch returns them (a coordinator
// replaying its internal topic reads them so) and calls fn for every record of each
// uncompressed data batch, with the record's offset. Control batches are skipped silently;
// compressed batches (coordinators never write them) are skipped and counted. It returns
// the offset after the last whole batch it saw.
func WalkRecords(raw []byte, fn func(offset int64, key, value []byte) error) (next int64, skipped int, err error) {
	return WalkBatchRecords(raw, func(_ *Header, offset int64, key, value []byte) error { return fn(offset, key, value) }, nil)
}

// WalkBatchRecords is WalkRecords for a reader that needs each record's batch header (a
// transactional batch's producer) and the control batches: control, when set, gets each
// control batch's header and its type (ok false for a control batch it cannot read).
func WalkBatchRecords(raw []byte, fn func(h *Header, offset int64, key, value []byte) error,
	control func(h *Header, typ ControlType, ok bool)) (next int64, skipped int, err error) {
	next = -1
	var recs []Record
	for len(raw) > 0 {
		h, ok := ParseHeader(raw)
		if !ok {
			return next, skipped, fmt.Errorf("batch header: %w", ErrTruncated)
		}
		size := h.Size()
		if h.Length < HeaderSize-LengthEnd || size > int64(len(raw)) {
			return next, skipped, fmt.Errorf("batch length %d: %w", h.Length, ErrTruncated)
		}
		batch := raw[:size]
		raw = raw[size:]
		if h.Magic != Magic {
			return next, skipped, fmt.Errorf("batch at offset %d has magic %d", h.BaseOffset, h.Magic)
		}
		if !CRCValid(batch) {
			return next, skipped, fmt.Errorf("batch at offset %d fails its CRC32C", h.BaseOffset)
		}
		if h.LastOffsetDelta < 0 {
			return next, skipped, fmt.Errorf("batch at offset %d has last offset delta %d", h.BaseOffset, h.LastOffsetDelta)
		}
		next = h.BaseOffset + int64(h.LastOffsetDelta) + 1
		switch {
		case h.Attributes&AttrControl != 0:
			if control != nil {
				typ, ok := ParseControl(batch)
				control(&h, typ, ok)
			}
			continue
		case h.Codec() != CodecNone:
			skipped++
			continue
		}
		if recs, _, err = DecodeRecords(batch, recs[:0]); err != nil {
			return next, skipped, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
		}
		for i := range recs {
			r := &recs[i]
			if err := fn(&h, h.BaseOffset+int64(r.OffsetDelta), r.Key, r.Value); err != nil {
				return next, skipped, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
			}
		}
	}
	return next, skipped, nil
}
