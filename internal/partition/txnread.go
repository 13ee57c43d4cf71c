package partition

import "github.com/cairn-io/cairn/internal/recordbatch"

// The read side of transactions: which aborted transactions a read_committed Fetch
// reports with the records it returns (see fetch.go). Consumers drop the records of those
// transactions themselves, up to each one's abort marker.

// abortedRead lists the aborted transactions with records in what res holds, read from
// offset up to upTo. Kafka's rule: the marker at or past the fetch offset, the first batch
// below the end of the returned data. The index is asked first up to upTo, which costs a
// binary search when no aborted transaction is near; only when it finds some is the end
// of the data looked up (its last batch's header), so a consumer is not told of
// transactions it reads nothing of. Where that header cannot be read the wider list is
// answered: an aborted transaction past the data is one the consumer never meets.
func (p *Partition) abortedRead(res *FetchResult, offset, upTo int64) []AbortedTxn {
	found := p.AbortedTxns(offset, upTo)
	if len(found) == 0 {
		return nil
	}
	end, ok := resultEnd(res)
	if !ok {
		return found
	}
	keep := found[:0] // AbortedTxns' slice is the caller's own
	for _, a := range found {
		if a.FirstOffset < end {
			keep = append(keep, a)
		}
	}
	if len(keep) == 0 {
		return nil
	}
	return keep
}

// resultEnd is the offset past the last batch res holds: from its bytes, or from the
// header of its last file range, read from the file.
func resultEnd(res *FetchResult) (int64, bool) {
	if n := res.Files.Len(); n > 0 {
		r := res.Files.Range(n - 1)
		if r.Len < recordbatch.HeadSize {
			return 0, false
		}
		var h [recordbatch.HeadSize]byte
		if _, err := r.File.ReadAt(h[:], r.Pos); err != nil {
			return 0, false
		}
		return recordbatch.BaseOffset(h[:]) + int64(recordbatch.Records(h[:])), true
	}
	b := res.Records
	var end int64
	ok := false
	for len(b) >= recordbatch.HeadSize {
		end, ok = recordbatch.BaseOffset(b)+int64(recordbatch.Records(b)), true
		size := recordbatch.Size(b)
		if size < recordbatch.HeadSize || size > int64(len(b)) {
			break
		}
		b = b[size:]
	}
	return end, ok
}
