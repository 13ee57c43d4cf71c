package partition

import (
	"errors"
	"os"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/storage"
)

// Fetch: what a consumer may read of the partition (never past last visible), as bytes
// or as ranges of the segment files for sendfile. The ranges travel as FileRecords, so
// the Kafka layer sends them without naming storage's types.
//
// read_committed (FetchRequest.ReadCommitted) reads the same bytes, only bounded by the
// last stable offset instead of last visible, and lists the aborted transactions whose
// records the answer may hold, for the consumer to drop them: Kafka serves aborted data
// and lets the client filter it. An offset between the two bounds gets no records and no
// error, as in Kafka. read_uncommitted pays for none of it but copying the last stable
// offset, which every answer reports (Kafka's LastStableOffset).

// FetchRequest is one partition of a consumer's Fetch request.
type FetchRequest struct {
	Offset int64
	// MaxBytes bounds the records returned, except that the first batch is returned
	// whole (KIP-74); 0 means the response is full: only the boundaries are reported.
	MaxBytes int32
	// CurrentLeaderEpoch fences a client's view of the leader (KIP-320); -1 skips it.
	CurrentLeaderEpoch int32
	// LastFetchedEpoch is the epoch of the last batch the consumer read (KIP-595,
	// Fetch v12 and later), to detect a log that diverged from it; -1 skips the check.
	LastFetchedEpoch int32
	// FollowerRead is set while replica.selector.class is the rack-aware selector (KIP-392,
	// a consumer's Fetch v11 or later): a follower then serves the fetch itself, up to the
	// visible offset its leader told it of (follower.go), and a leader may point the
	// consumer to a replica in ClientRack instead.
	FollowerRead bool
	// ClientRack is the consumer's rack (Fetch v11 RackId); "" when it sent none.
	ClientRack string
	// ReadCommitted is isolation level read_committed (Fetch v4 IsolationLevel 1): read
	// up to the last stable offset only, and list the aborted transactions read.
	ReadCommitted bool
}

// FetchResult is one partition's part of a Fetch response. The records are either bytes
// (Records) or, from FetchFiles, ranges of segment files (Files), which the caller must
// Release.
type FetchResult struct {
	Records       []byte
	Files         FileRecords
	HighWatermark int64
	// LastStable is the replica's last stable offset (Boundaries.LastStable), whatever
	// the isolation level: Kafka reports it to every consumer.
	LastStable int64
	LogStart   int64
	Err        *kerr.Error
	// Aborted, for read_committed only, are the aborted transactions with records in the
	// range returned (from the fetch offset to the end of the last batch), in the order of
	// their markers; nil when there are none.
	Aborted []AbortedTxn
	// Diverging is set when the consumer's last fetched epoch does not end where it
	// thinks: the largest epoch at or below it and that epoch's end offset, where the
	// consumer must truncate to. No records are returned then.
	Diverging *EpochEnd
	// PreferredReadReplica is the broker the consumer should fetch this partition from
	// instead (KIP-392): a replica in its rack, or a follower's leader; no records come
	// with it. 0: none (brokers and Raft ids start at 1).
	PreferredReadReplica int32
	// NotServingYet qualifies NOT_LEADER_OR_FOLLOWER from a leader that does not serve
	// reads yet (Boundaries.Serving): it will within a round trip, so a long poll may wait
	// for it rather than send the consumer off to refresh its metadata.
	NotServingYet bool
}

// EpochEnd is a leader epoch and the offset where it ended.
type EpochEnd struct {
	Epoch     int32
	EndOffset int64
}

// Size is the number of record bytes in the result.
func (r *FetchResult) Size() int64 { return int64(len(r.Records)) + r.Files.Bytes() }

// Release frees the file ranges of a FetchFiles result.
func (r *FetchResult) Release() { r.Files.Release() }

// FileRange is Len bytes of File from position Pos: one stored batch.
type FileRange struct {
	File *os.File
	Pos  int64
	Len  int64
}

// FileRecords are records left in the segment files, as ranges to send with sendfile.
// The files are private duplicates of the segments' descriptors, so the ranges stay
// readable after retention or compaction replaced the segments; Release closes them.
// The zero value holds no records.
type FileRecords struct {
	slices storage.BatchSlices
}

// FileRecordsOf holds ranges of files the caller owns: Release does not close them.
func FileRecordsOf(ranges []FileRange) FileRecords {
	var r FileRecords
	for _, fr := range ranges {
		r.slices.Slices = append(r.slices.Slices, storage.FileSlice{File: fr.File, Pos: fr.Pos, Len: fr.Len})
		r.slices.Bytes += fr.Len
	}
	return r
}

// Len is the number of ranges.
func (r *FileRecords) Len() int { return len(r.slices.Slices) }

// Range returns range i, 0 <= i < Len.
func (r *FileRecords) Range(i int) FileRange {
	s := r.slices.Slices[i]
	return FileRange{File: s.File, Pos: s.Pos, Len: s.Len}
}

// Bytes is the sum of the ranges' lengths.
func (r *FileRecords) Bytes() int64 { return r.slices.Bytes }

// Release closes the duplicated descriptors; the ranges are unusable afterwards. It is
// safe on the zero value and to call twice.
func (r *FileRecords) Release() { r.slices.Release() }

// ServeFetch answers one partition of a consumer's Fetch: with follower fetching on, a
// follower's answer or a leader's choice of a replica in the consumer's rack
// (follower.go); then a diverging log (the consumer must truncate before it reads on), only
// the boundaries when the response is already full, else the records as FetchFiles reads
// them. A consumer that sends its rack to a follower while follower fetching is off is
// pointed back to the leader, having been sent there while it was on.
func (p *Partition) ServeFetch(req FetchRequest) FetchResult {
	if req.FollowerRead {
		if res, ok := p.serveRackAware(req); ok {
			return res
		}
	}
	res := p.serveFromLeader(req)
	if res.Err == kerr.NotLeaderForPartition && req.ClientRack != "" {
		p.pointToLeader(&res, p.Boundaries())
	}
	return res
}

// serveFromLeader is ServeFetch as a leader answers it, and a follower refuses it.
func (p *Partition) serveFromLeader(req FetchRequest) FetchResult {
	if req.LastFetchedEpoch >= 0 && p.CheckEpoch(req.CurrentLeaderEpoch) == nil {
		if d := p.diverging(req); d != nil {
			res := resultAt(p.Boundaries())
			res.Diverging = d
			return res
		}
	}
	if req.MaxBytes <= 0 {
		return resultAt(p.Boundaries())
	}
	return p.fetch(req.Offset, req.CurrentLeaderEpoch, req.ReadCommitted, func(res *FetchResult, upTo int64) error {
		return p.readFiles(res, req.Offset, req.MaxBytes, upTo)
	})
}

// resultAt is an answer of no records, with the boundaries b reports.
func resultAt(b Boundaries) FetchResult {
	return FetchResult{HighWatermark: b.LastVisible, LastStable: b.LastStable, LogStart: b.LogStart}
}

// Fetch reads whole batches starting with the one that holds offset, never past last
// visible (read_uncommitted).
func (p *Partition) Fetch(offset int64, maxBytes int32, currentLeaderEpoch int32) FetchResult {
	return p.fetch(offset, currentLeaderEpoch, false, func(res *FetchResult, upTo int64) (err error) {
		res.Records, err = p.log.ReadBatches(offset, int(maxBytes), upTo)
		return err
	})
}

// FetchFiles is Fetch answered with file ranges of the stored batches (see
// storage.ReadBatchSlices), so they can be sent with sendfile; where the log's files are
// not OS files, or some batch wanted has not been checked by this process yet (after a
// restart, in a closed segment Open did not rescan), it answers with bytes as Fetch does,
// and that read checks their entry CRCs so the next fetch of them gets file ranges.
func (p *Partition) FetchFiles(offset int64, maxBytes int32, currentLeaderEpoch int32) FetchResult {
	return p.fetch(offset, currentLeaderEpoch, false, func(res *FetchResult, upTo int64) error {
		return p.readFiles(res, offset, maxBytes, upTo)
	})
}

// readFiles is FetchFiles' read.
func (p *Partition) readFiles(res *FetchResult, offset int64, maxBytes int32, upTo int64) (err error) {
	res.Files.slices, err = p.log.ReadBatchSlices(offset, int(maxBytes), upTo)
	if errors.Is(err, storage.ErrNoFileSlices) {
		res.Records, err = p.log.ReadBatches(offset, int(maxBytes), upTo)
	}
	return err
}

// readFunc reads the batches from the one holding the fetch offset up to upTo.
type readFunc func(res *FetchResult, upTo int64) error

// fetch runs the checks every fetch answers before reading, then read, up to last visible
// or, for read_committed, last stable.
func (p *Partition) fetch(offset int64, currentLeaderEpoch int32, readCommitted bool, read readFunc) FetchResult {
	b := p.Boundaries()
	if err := leaderCheck(b, currentLeaderEpoch); err != nil {
		res := resultAt(b)
		res.Err, res.NotServingYet = err, b.IsLeader && !b.Serving
		return res
	}
	return p.readVisible(b, offset, readCommitted, read)
}

// readVisible answers a fetch at offset from b: out of range outside the log, nothing at
// or past the bound (last visible, or last stable for read_committed), else what read
// finds up to it, and for read_committed the aborted transactions in what it found.
func (p *Partition) readVisible(b Boundaries, offset int64, readCommitted bool, read readFunc) FetchResult {
	res := resultAt(b)
	if offset < b.LogStart || offset > b.LogEnd {
		res.Err = kerr.OffsetOutOfRange
		return res
	}
	upTo := b.LastVisible
	if readCommitted {
		upTo = b.LastStable
	}
	if offset >= upTo {
		return res
	}
	err := read(&res, upTo)
	switch {
	case errors.Is(err, storage.ErrOffsetOutOfRange):
		res.Err = kerr.OffsetOutOfRange
	case err != nil:
		p.lg.Error("read failed", "offset", offset, "err", err)
		res.Err = kerr.KafkaStorageError
	case readCommitted && res.Size() > 0:
		res.Aborted = p.abortedRead(&res, offset, upTo)
	}
	return res
}
