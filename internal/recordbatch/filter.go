package recordbatch

import (
	"fmt"
	"math"
)

// FilterResult says what Filter did to one batch.
type FilterResult struct {
	Kept, Removed     int
	TombstonesRemoved int  // removed records with a key and a null value
	Changed           bool // the batch was rewritten (Removed > 0)
}

// Filter returns the batch with only the records keep accepts (keep gets each record and
// its absolute offset). When every record is kept it returns batch itself. Otherwise it
// returns a new batch with the same header fields (base offset, partition leader epoch,
// lastOffsetDelta, timestamps, producer id, epoch and base sequence) and the kept records,
// byte for byte, compressed again with the batch's codec; NumRecords, the length and the
// CRC32C are recomputed. A batch left with no records has no records section and no codec
// (as Kafka writes an empty batch), so every client can skip it. recs is scratch space,
// returned for reuse.
func Filter(batch []byte, recs []Record, keep func(r *Record, offset int64) bool) ([]byte, FilterResult, []Record, error) {
	var res FilterResult
	recs, _, err := DecodeRecords(batch, recs[:0])
	if err != nil {
		return nil, res, recs, err
	}
	base := BaseOffset(batch)
	keepMask := make([]bool, len(recs))
	keptBytes := 0
	for i := range recs {
		r := &recs[i]
		if keep(r, base+int64(r.OffsetDelta)) {
			keepMask[i] = true
			res.Kept++
			keptBytes += len(r.Raw)
		} else {
			res.Removed++
			if r.Tombstone && !r.NullKey {
				res.TombstonesRemoved++
			}
		}
	}
	if res.Removed == 0 {
		return batch, res, recs, nil
	}
	res.Changed = true
	h, _ := ParseHeader(batch)
	var section []byte
	if res.Kept > 0 {
		kept := make([]byte, 0, keptBytes)
		for i := range recs {
			if keepMask[i] {
				kept = append(kept, recs[i].Raw...)
			}
		}
		if section, err = Compress(h.Codec(), kept, batch[HeaderSize:]); err != nil {
			return nil, res, recs, fmt.Errorf("recordbatch: recompress codec %d: %w", h.Codec(), err)
		}
	} else {
		h.Attributes &^= CodecMask
	}
	if int64(HeaderSize+len(section))-LengthEnd > math.MaxInt32 {
		return nil, res, recs, malformed("rewritten batch too large")
	}
	h.NumRecords = int32(res.Kept)
	return Assemble(h, section), res, recs, nil
}
