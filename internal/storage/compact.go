package storage

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// CompactOptions configures one compaction round (Log.Compact).
type CompactOptions struct {
	// DeleteRetentionMs is how long a tombstone (a keyed record with a null value) that is
	// the latest record of its key is kept, counted from when compaction first rewrote the
	// segment holding it (delete.retention.ms). Negative keeps tombstones forever.
	DeleteRetentionMs int64
	// UpTo bounds the round: only closed segments whose entries all lie below UpTo, and
	// below the flushed offset, are read or rewritten. Pass the committed offset, so that
	// an entry Raft may still truncate is never compacted and never lets an older record
	// of its key go. UpTo <= 0 compacts nothing.
	UpTo int64
	// Now is the round's clock; nil uses the log's (Options.Now).
	Now func() time.Time
}

// CompactStats reports what one round did.
type CompactStats struct {
	// Skipped: nothing could have changed since the last round (no new closed segment in
	// range, no tombstone due, same options), so nothing was read.
	Skipped            bool
	SegmentsScanned    int   // closed segments read to build the key map
	SegmentsRewritten  int   // segments replaced by a compacted copy
	Keys               int   // distinct keys in the scanned segments
	RecordsRemoved     int64 // superseded records, records without a key, expired tombstones
	TombstonesRemoved  int64 // of RecordsRemoved: tombstones (superseded or past DeleteRetentionMs)
	EmptiedBatches     int64 // batches left with no records (kept as empty batches)
	UndecodableBatches int64 // batches left as they are: their records could not be decoded
	BytesBefore        int64 // size of the rewritten segments before the round
	BytesAfter         int64 // and after it
}

// compactState is what a round remembers for the next one. Guarded by mu, which also
// serializes rounds.
type compactState struct {
	mu        sync.Mutex
	valid     bool   // the fields below describe the last completed round
	lastIndex uint64 // last Raft index of the last segment that round covered
	truncGen  uint64 // Log.truncGen as of that round
	retention int64  // its DeleteRetentionMs
	dueMs     int64  // when its oldest kept tombstone expires (MaxInt64: none)
}

// errSegmentGone ends a round whose segment left the log (retention, truncation, Reset)
// while the round was reading it: what was read may no longer describe the log.
var errSegmentGone = errors.New("storage: segment left the log during compaction")

// keyHash identifies a key in a round's key map: 128 bits from two independently seeded
// hashes, so a collision (which would drop the latest value of one of the two keys) is
// as unlikely as in Kafka's MD5-keyed offset map.
type keyHash struct{ a, b uint64 }

// candidate is a closed segment a round works on, with the fields it needs as of the
// round's start (they are guarded by Log.mu, and only a truncation would change them,
// which the round notices).
type candidate struct {
	s         *segment
	lastIndex uint64
	lastTerm  uint64
	endOffset int64
	maxTs     int64
	size      int64
}

// segCounts is what pass one learns about one segment.
type segCounts struct {
	keyed       int64 // records with a key
	nullKeys    int64 // records without one
	latest      int64 // keys whose latest record is here
	latestTombs int64 // of those, tombstones
}

// Compact runs one compaction round. For every key, only the record with the highest
// offset is kept; records without a key are removed; a tombstone that is the latest record
// of its key is removed once its segment was first compacted more than DeleteRetentionMs
// ago. Offsets never change: a rewritten batch keeps its header (base offset, leader epoch,
// lastOffsetDelta, timestamps, producer id, epoch and sequence), holds fewer records, and
// a batch left with none stays as an empty batch. Every entry keeps its Raft index and
// term, so the Raft log stays dense and each segment's boundaries, term runs and
// timestamps are unchanged.
//
// Only closed segments below opts.UpTo and the flushed offset take part; the active
// segment is never touched. Segments are rewritten oldest first, each one swapped in
// atomically (see the package documentation); a round that fails part way leaves every
// segment either as it was or compacted. Control and transactional batches and batches
// whose records cannot be decoded are kept as they are.
//
// Compact may run concurrently with Append, Flush, reads and the structural operations;
// it holds the flush lock only while swapping a segment in. Rounds are serialized.
func (l *Log) Compact(opts CompactOptions) (CompactStats, error) {
	var st CompactStats
	c := &l.compaction
	c.mu.Lock()
	defer c.mu.Unlock()
	now := l.now
	if opts.Now != nil {
		now = opts.Now
	}
	nowMs := now().UnixMilli()
	retention := opts.DeleteRetentionMs

	l.mu.RLock()
	if err := l.usable(); err != nil {
		l.mu.RUnlock()
		return st, err
	}
	limit := min(l.flushedOffset, opts.UpTo)
	var cands []candidate
	for _, s := range l.segs[:len(l.segs)-1] {
		if !s.durable || !s.indexWritten || s.endOffset > limit {
			break
		}
		cands = append(cands, candidate{s: s, lastIndex: s.lastIndex, lastTerm: s.lastTerm, endOffset: s.endOffset, maxTs: s.maxTs, size: s.size})
	}
	gen := l.truncGen
	l.mu.RUnlock()
	if len(cands) == 0 || opts.UpTo <= 0 {
		st.Skipped = true
		return st, nil
	}
	lastIndex := cands[len(cands)-1].lastIndex
	if c.valid && c.lastIndex == lastIndex && c.truncGen == gen && c.retention == retention && nowMs < c.dueMs {
		st.Skipped = true
		return st, nil
	}
	c.valid = false

	// Pass one: the latest offset of every key (offset<<1 | 1 if that record is a tombstone).
	seedA, seedB := maphash.MakeSeed(), maphash.MakeSeed()
	hashKey := func(k []byte) keyHash { return keyHash{maphash.Bytes(seedA, k), maphash.Bytes(seedB, k)} }
	latest := make(map[keyHash]int64)
	counts := make([]segCounts, len(cands))
	var recs []recordbatch.Record
	for i, cd := range cands {
		cnt := &counts[i]
		err := l.scanClosed(cd.s, cd.size, func(e *parsedEntry, _ int64) error {
			if e.typ != EntryData || !compactable(e.payload) {
				return nil
			}
			var err error
			recs, _, err = recordbatch.DecodeRecords(e.payload, recs[:0])
			if err != nil {
				st.UndecodableBatches++
				return nil
			}
			base := recordbatch.BaseOffset(e.payload)
			for j := range recs {
				r := &recs[j]
				if r.NullKey {
					cnt.nullKeys++
					continue
				}
				cnt.keyed++
				v := (base + int64(r.OffsetDelta)) << 1
				if r.Tombstone {
					v |= 1
				}
				latest[hashKey(r.Key)] = v
			}
			return nil
		})
		if errors.Is(err, errSegmentGone) {
			return st, nil // the log changed under the round; the next one starts afresh
		}
		if err != nil {
			return st, err
		}
		st.SegmentsScanned++
	}
	st.Keys = len(latest)
	for _, v := range latest {
		off := v >> 1
		i := sort.Search(len(cands), func(i int) bool { return cands[i].endOffset > off })
		if i < len(cands) {
			counts[i].latest++
			if v&1 != 0 {
				counts[i].latestTombs++
			}
		}
	}

	// Pass two: rewrite, oldest first, each segment that has something to remove or whose
	// tombstones need their clock started (cleanedMs). Going oldest first, and stopping at
	// the first failure, is what makes tombstone removal safe: by the time a segment's
	// clock is durably started, the older records of every key it deletes are durably gone
	// from every earlier segment (and from its own copy), so when the tombstone goes later
	// nothing it deleted can come back.
	expired := func(cleanedMs int64) bool {
		return retention >= 0 && cleanedMs > 0 && nowMs-cleanedMs > retention
	}
	dueMs := int64(math.MaxInt64)
	for i, cd := range cands {
		cnt := &counts[i]
		cleaned := cd.s.cleanedMs
		exp := expired(cleaned)
		rewrite := cnt.keyed > cnt.latest || cnt.nullKeys > 0 || (cnt.latestTombs > 0 && (cleaned == 0 || exp))
		if cleaned == 0 && rewrite {
			cleaned = nowMs
		}
		if cnt.latestTombs > 0 && !exp && retention >= 0 {
			dueMs = min(dueMs, cleaned+retention+1)
		}
		if !rewrite {
			continue
		}
		keep := func(r *recordbatch.Record, off int64) bool {
			if r.NullKey || latest[hashKey(r.Key)]>>1 != off {
				return false
			}
			return !(r.Tombstone && exp)
		}
		ns, err := l.rewriteSegment(cd, cleaned, keep, &st)
		newSize := int64(0)
		if err == nil {
			newSize = ns.size // before ns is published
			err = l.swapSegment(cd.s, ns, cd.size, gen)
		}
		if errors.Is(err, errSegmentGone) {
			return st, nil
		}
		if err != nil {
			return st, err
		}
		st.SegmentsRewritten++
		st.BytesBefore += cd.size
		st.BytesAfter += newSize
	}
	c.valid, c.lastIndex, c.truncGen, c.retention, c.dueMs = true, lastIndex, gen, retention, dueMs
	return st, nil
}

// scanClosed calls fn for every entry of the closed segment s (of size bytes) in order,
// with the Kafka offset the entry starts at. It reads without the log's lock, holding
// s.ioMu shared for a bounded stretch at a time, and returns errSegmentGone once s is no
// longer a closed segment of that size in the log (ErrClosed if the log closed). The
// entry's payload is only valid during the call.
func (l *Log) scanClosed(s *segment, size int64, fn func(e *parsedEntry, offset int64) error) error {
	const stretch = 8 << 20
	pin := func() error {
		l.mu.RLock()
		defer l.mu.RUnlock()
		if err := l.readable(); err != nil {
			return err
		}
		if i := l.segIndexOf(s); i < 0 || i == len(l.segs)-1 || s.size != size {
			return errSegmentGone
		}
		s.ioMu.RLock()
		return nil
	}
	if err := pin(); err != nil {
		return err
	}
	bp := getReadBuf()
	r := newEntryReader(s.f, s.start(), size, 1<<20, *bp)
	defer func() { *bp = r.buf[:0]; putReadBuf(bp) }()
	since := r.pos
	for {
		if r.pos-since >= stretch {
			s.ioMu.RUnlock()
			if err := pin(); err != nil {
				return err
			}
			since = r.pos
		}
		at, off := r.pos, r.offset
		e, st, err := r.next()
		if err == nil && st == readBad {
			err = corruptAt(s, at)
		}
		if err == nil && st == readOK {
			err = fn(&e, off)
		}
		if err != nil || st == readEnd {
			s.ioMu.RUnlock()
			return err
		}
	}
}

// segIndexOf returns the position of s in l.segs, or -1. Caller holds mu.
func (l *Log) segIndexOf(s *segment) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].baseIndex >= s.baseIndex })
	if i < len(l.segs) && l.segs[i] == s {
		return i
	}
	return -1
}

// rewriteSegment writes a compacted copy of the closed segment s to its temporary file
// "<base>.log.tmp" and fsyncs it: the same header but for cleanedMs, and every entry with
// its index, term and offsets, data batches filtered by keep. It returns the copy as a
// segment ready to be swapped in (its file open on the temporary name).
func (l *Log) rewriteSegment(cd candidate, cleanedMs int64, keep func(*recordbatch.Record, int64) bool, st *CompactStats) (ns *segment, err error) {
	s := cd.s
	tmp := segPath(l.dir, s.baseIndex, logSuffix) + tmpSuffix
	f, err := l.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("storage: compact %s: %w", segmentName(s.baseIndex), err)
	}
	defer func() {
		if err != nil {
			f.Close()
			l.fs.Remove(tmp) // best effort: Open removes leftover temporary files anyway
		}
	}()
	h := segHeader{baseIndex: s.baseIndex, baseOffset: s.baseOffset, prevTerm: s.prevTerm, createdMs: s.createdMs, cleanedMs: cleanedMs}
	ns = newSegment(h, f)
	buf := encodeSegHeader(h)
	var written int64
	var recs []recordbatch.Record
	err = l.scanClosed(s, cd.size, func(e *parsedEntry, off int64) error {
		data := e.payload
		if e.typ == EntryData && compactable(data) {
			out, res, r, ferr := recordbatch.Filter(data, recs, keep)
			recs = r
			if ferr == nil && res.Changed {
				data = out
				st.RecordsRemoved += int64(res.Removed)
				st.TombstonesRemoved += int64(res.TombstonesRemoved)
				if res.Kept == 0 {
					st.EmptiedBatches++
				}
			}
		}
		pe := parsedEntry{index: e.index, term: e.term, typ: e.typ, payload: data, size: int64(entryHeaderSize + len(data))}
		m := pe.meta(off)
		pos := ns.size
		if !ns.fits(pos, &m) {
			return fmt.Errorf("storage: compact %s: entry %d does not fit", segmentName(s.baseIndex), e.index)
		}
		buf = appendEntry(buf, &Entry{Index: e.index, Term: e.term, Type: e.typ, BaseOffset: off, Data: data})
		ns.observe(&m, pos, l.interval)
		if len(buf) >= 1<<20 {
			if _, err := f.WriteAt(buf, written); err != nil {
				return err
			}
			written += int64(len(buf))
			buf = buf[:0]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, err = f.WriteAt(buf, written); err != nil {
		return nil, err
	}
	if ns.lastIndex != cd.lastIndex || ns.lastTerm != cd.lastTerm || ns.endOffset != cd.endOffset || ns.maxTs != cd.maxTs {
		return nil, fmt.Errorf("%w: compacted copy of %s ends at index %d offset %d, the segment at %d/%d",
			ErrCorrupt, segmentName(s.baseIndex), ns.lastIndex, ns.endOffset, cd.lastIndex, cd.endOffset)
	}
	if err = f.Sync(); err != nil {
		return nil, err
	}
	// This process wrote every entry of the copy, computing its CRC32C (from payloads it
	// had verified, or filtered itself), so the whole copy counts as checked.
	ns.checkedTo.Store(ns.size)
	return ns, nil
}

// swapSegment replaces the closed segment old with its compacted copy ns, under the flush
// lock, unless old changed since it was read (its size then was size, and Log.truncGen gen). On disk, in this order, each step made durable before the next:
//
//  1. old's index files are removed (until step 3, Open rescans the segment);
//  2. "<base>.log.tmp" is renamed over "<base>.log";
//  3. ns's index files are written.
//
// A crash anywhere leaves the old or the new .log, never a mix, and never index files
// that describe the other one; Open removes a leftover temporary file. In memory, ns
// takes old's place; readers that pinned old go on reading its (unlinked) file, which is
// closed once they are done.
func (l *Log) swapSegment(old, ns *segment, size int64, gen uint64) (err error) {
	tmp := segPath(l.dir, old.baseIndex, logSuffix) + tmpSuffix
	l.flushMu.Lock()
	swapped := false
	defer func() {
		l.flushMu.Unlock()
		if !swapped {
			ns.f.Close()
			l.fs.Remove(tmp)
			return
		}
		old.ioMu.Lock() // wait for the readers of the old file
		old.f.Close()
		old.ioMu.Unlock()
	}()
	l.mu.RLock()
	err = l.usable()
	i := l.segIndexOf(old)
	gone := i < 0 || i == len(l.segs)-1 || l.truncGen != gen || old.size != size
	runs := l.runsIn(old)
	l.mu.RUnlock()
	if err != nil {
		return err
	}
	if gone {
		return errSegmentGone
	}
	idx, tidx := ns.encodeIndex(runs), ns.encodeTimeIndex()
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		if err := l.fs.Remove(segPath(l.dir, old.baseIndex, suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	// Nothing describes the old file on disk any more; should anything below fail, Flush
	// rewrites its index files.
	l.mu.Lock()
	old.indexWritten = false
	l.mu.Unlock()
	if err := l.fs.Rename(tmp, segPath(l.dir, old.baseIndex, logSuffix)); err != nil {
		return err
	}
	// The new file is in place: both copies hold the same entries, so readers may use it
	// from now on whatever happens next.
	ns.durable = true
	l.mu.Lock()
	if j := l.segIndexOf(old); j >= 0 {
		l.segs[j] = ns
		l.totalSize += ns.size - old.size
	}
	l.mu.Unlock()
	swapped = true
	if err := l.fs.SyncDir(l.dir); err != nil {
		// Which file the directory holds after a crash is unknown: as for any failed fsync,
		// the log stops accepting writes until it is reopened.
		return l.failWith(fmt.Errorf("storage: fsync dir %s: %w", l.dir, err))
	}
	if err := writeFileDurable(l.fs, segPath(l.dir, ns.baseIndex, indexSuffix), idx); err != nil {
		return err
	}
	if err := writeFileDurable(l.fs, segPath(l.dir, ns.baseIndex, timeIndexSuffix), tidx); err != nil {
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	l.mu.Lock()
	ns.indexWritten = true
	l.mu.Unlock()
	return nil
}

// compactable reports whether compaction may look inside a batch: control and
// transactional batches are kept as they are.
func compactable(batch []byte) bool {
	return recordbatch.Attributes(batch)&(recordbatch.AttrControl|recordbatch.AttrTransactional) == 0
}
