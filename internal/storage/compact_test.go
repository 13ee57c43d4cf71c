package storage

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

// kv is one record to produce: a nil key is a null key, a nil val a tombstone.
type kv struct{ key, val []byte }

func rec(k, v string) kv { return kv{key: []byte(k), val: []byte(v)} }
func tomb(k string) kv   { return kv{key: []byte(k)} }

func kvBatch(ts int64, codec kafkatest.Codec, xerial bool, recs ...kv) []byte {
	kvs := make([]kafkatest.KV, len(recs))
	for i, r := range recs {
		kvs[i] = kafkatest.KV{Key: r.key, Value: r.val}
	}
	return kafkatest.KeyedBatch(ts, codec, xerial, kvs...)
}

// storedRec is one record as written, by offset.
type storedRec struct {
	key, val []byte
	nullKey  bool
	tomb     bool
}

// ctLog drives a log for compaction tests and remembers every record written.
type ctLog struct {
	t     tT
	fs    *MemFS
	o     Options
	l     *Log
	clock *fakeClock
	term  uint64
	recs  map[int64]storedRec // every record ever appended, by offset
}

func newCtLog(t tT, segBytes int64) *ctLog {
	c := &ctLog{t: t, fs: NewMemFS(), clock: newClock(), term: 1, recs: map[int64]storedRec{}}
	c.o = Options{FS: c.fs, Dir: "/c", SegmentBytes: segBytes, IndexIntervalBytes: 128, Now: c.clock.Now}
	c.l = mustOpen(t, c.o)
	return c
}

func (c *ctLog) append(codec kafkatest.Codec, recs ...kv) Entry {
	c.t.Helper()
	e := Entry{Index: c.l.LastIndex() + 1, Term: c.term, Type: EntryData, Data: kvBatch(c.clock.ms(), codec, false, recs...)}
	ents := []Entry{e}
	if err := c.l.Append(ents); err != nil {
		c.t.Fatalf("Append: %v", err)
	}
	for i, r := range recs {
		c.recs[ents[0].BaseOffset+int64(i)] = storedRec{key: r.key, val: r.val, nullKey: r.key == nil, tomb: r.val == nil}
	}
	return ents[0]
}

func (c *ctLog) internal() {
	c.t.Helper()
	if err := c.l.Append([]Entry{{Index: c.l.LastIndex() + 1, Term: c.term, Type: EntryInternal}}); err != nil {
		c.t.Fatalf("Append internal: %v", err)
	}
}

func (c *ctLog) flush() {
	c.t.Helper()
	if err := c.l.Flush(); err != nil {
		c.t.Fatalf("Flush: %v", err)
	}
}

func (c *ctLog) compact(retention int64) CompactStats {
	c.t.Helper()
	c.flush() // closed segments' index files, so that they are eligible
	st, err := c.l.Compact(CompactOptions{DeleteRetentionMs: retention, UpTo: c.l.LogEndOffset()})
	if err != nil {
		c.t.Fatalf("Compact: %v", err)
	}
	return st
}

// closedEnd is the end offset of the last closed segment.
func closedEnd(l *Log) int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.segs) < 2 {
		return l.segs[0].baseOffset
	}
	return l.segs[len(l.segs)-2].endOffset
}

// readRec is a record as read back.
type readRec struct {
	off      int64
	key, val []byte
}

// readAll reads every batch from the log start and checks what compaction must keep
// true of them: Kafka CRC, consecutive batches, NumRecords <= lastOffsetDelta+1, records
// within their batch's offset range, and every record identical to what was written at
// its offset. It returns the records in offset order.
func (c *ctLog) readAll(l *Log) []readRec {
	c.t.Helper()
	lso, leo := l.LogStartOffset(), l.LogEndOffset()
	if lso >= leo {
		return nil
	}
	b, err := l.ReadBatches(lso, 1<<30, leo)
	if err != nil {
		c.t.Fatalf("ReadBatches: %v", err)
	}
	return c.checkBatches(b)
}

func (c *ctLog) checkBatches(b []byte) []readRec {
	c.t.Helper()
	var out []readRec
	for _, batch := range splitBatches(c.t, b) {
		rb, recs, err := kafkatest.Records(batch)
		if err != nil {
			c.t.Fatalf("batch at %d: %v", recordbatch.BaseOffset(batch), err)
		}
		if rb.NumRecords > rb.LastOffsetDelta+1 {
			c.t.Fatalf("batch at %d: %d records, lastOffsetDelta %d", rb.FirstOffset, rb.NumRecords, rb.LastOffsetDelta)
		}
		if rb.NumRecords == 0 && (len(rb.Records) != 0 || rb.Attributes&7 != 0) {
			c.t.Fatalf("empty batch at %d has %d record bytes, attributes %#x", rb.FirstOffset, len(rb.Records), rb.Attributes)
		}
		for _, r := range recs {
			off := rb.FirstOffset + int64(r.OffsetDelta)
			if r.OffsetDelta < 0 || r.OffsetDelta > rb.LastOffsetDelta {
				c.t.Fatalf("record offset delta %d outside batch at %d", r.OffsetDelta, rb.FirstOffset)
			}
			w, ok := c.recs[off]
			if !ok || !bytes.Equal(w.key, r.Key) || !bytes.Equal(w.val, r.Value) || w.nullKey != (r.Key == nil) || w.tomb != (r.Value == nil) {
				c.t.Fatalf("offset %d reads key %q value %q, written %q %q (%v)", off, r.Key, r.Value, w.key, w.val, ok)
			}
			if len(out) > 0 && off <= out[len(out)-1].off {
				c.t.Fatalf("offset %d after %d", off, out[len(out)-1].off)
			}
			out = append(out, readRec{off: off, key: r.Key, val: r.Value})
		}
	}
	return out
}

// expected computes what compaction must leave: below end, for each key only the latest
// record below end, minus null keys and the tombstones dropTomb says are expired; every
// record at or beyond end as written.
func (c *ctLog) expected(end int64, dropTomb func(off int64) bool) []int64 {
	latest := map[string]int64{}
	for off, r := range c.recs {
		if off < end && !r.nullKey {
			if cur, ok := latest[string(r.key)]; !ok || off > cur {
				latest[string(r.key)] = off
			}
		}
	}
	var out []int64
	for off, r := range c.recs {
		if off >= end || (!r.nullKey && latest[string(r.key)] == off && !(r.tomb && dropTomb(off))) {
			out = append(out, off)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func offsetsOf(rs []readRec) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.off
	}
	return out
}

func sameOffsets(t tT, what string, got, want []int64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: offsets\n got %v\nwant %v", what, got, want)
	}
}

// entriesMeta is the log's entries without their payloads.
func entriesMeta(t tT, l *Log) []string {
	t.Helper()
	ents, err := l.Entries(l.FirstIndex(), l.LastIndex()+1, 1<<62)
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = fmt.Sprintf("%d/%d/%d/%d+%d@%d", e.Index, e.Term, e.Type, e.BaseOffset, e.Records, e.MaxTimestamp)
	}
	return out
}

func noTombExpired(int64) bool { return false }

func TestCompactKeepsLatestValuePerKeyAcrossSegments(t *testing.T) {
	c := newCtLog(t, 600)
	keys := []string{"a", "b", "c", "d", "e"}
	for i := 0; i < 60; i++ {
		c.clock.Advance(time.Millisecond)
		k := keys[(i*7)%len(keys)]
		if i%4 == 0 {
			c.append(kafkatest.CodecNone, rec(k, fmt.Sprint("v", i)), rec(keys[i%len(keys)], fmt.Sprint("w", i)))
		} else {
			c.append(kafkatest.CodecNone, rec(k, fmt.Sprint("v", i)))
		}
		if i%9 == 0 {
			c.term++
			c.internal()
		}
	}
	c.l.mu.RLock()
	nsegs := len(c.l.segs)
	c.l.mu.RUnlock()
	if nsegs < 5 {
		t.Fatalf("only %d segments", nsegs)
	}
	before := entriesMeta(t, c.l)
	answers := lookups(t, c.l)
	leo, last, size := c.l.LogEndOffset(), c.l.LastIndex(), c.l.SizeBytes()
	end := closedEnd(c.l)

	st := c.compact(DefaultDeleteRetentionForTest)
	if st.SegmentsRewritten == 0 || st.RecordsRemoved == 0 || st.Keys != len(keys) || st.BytesAfter >= st.BytesBefore {
		t.Fatalf("stats %+v", st)
	}
	got := c.readAll(c.l)
	sameOffsets(t, "after compaction", offsetsOf(got), c.expected(end, noTombExpired))
	// Offsets, Raft indexes, terms and timestamps are untouched; the log is smaller.
	if after := entriesMeta(t, c.l); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("entries changed:\n%v\n%v", before, after)
	}
	if got := lookups(t, c.l); got != answers {
		t.Fatalf("lookups changed:\n%s\n%s", answers, got)
	}
	if c.l.LogEndOffset() != leo || c.l.LastIndex() != last || c.l.SizeBytes() >= size {
		t.Fatalf("leo %d last %d size %d, was %d %d %d", c.l.LogEndOffset(), c.l.LastIndex(), c.l.SizeBytes(), leo, last, size)
	}
	// The latest value of every key is still the latest record of that key.
	want := map[string]string{}
	for off := int64(0); off < leo; off++ {
		if r, ok := c.recs[off]; ok {
			want[string(r.key)] = string(r.val)
		}
	}
	gotLatest := map[string]string{}
	for _, r := range got {
		gotLatest[string(r.key)] = string(r.val)
	}
	if fmt.Sprint(gotLatest) != fmt.Sprint(want) {
		t.Fatalf("latest values %v, want %v", gotLatest, want)
	}

	// A second round has nothing to do and says so without reading.
	if st := c.compact(DefaultDeleteRetentionForTest); !st.Skipped {
		t.Fatalf("second round not skipped: %+v", st)
	}
	// Everything survives a reopen, through the index files and through a full rescan.
	if err := c.l.Close(); err != nil {
		t.Fatal(err)
	}
	c.l = mustOpen(t, c.o)
	sameOffsets(t, "after reopen", offsetsOf(c.readAll(c.l)), offsetsOf(got))
	if got := lookups(t, c.l); got != answers {
		t.Fatalf("lookups changed after reopen:\n%s\n%s", answers, got)
	}
	c.l.Close()
	names, _ := c.fs.ReadDir("/c")
	for _, n := range names {
		if _, ok := parseSegmentName(n, indexSuffix); ok {
			c.fs.Remove("/c/" + n)
		}
		if _, ok := parseSegmentName(n, timeIndexSuffix); ok {
			c.fs.Remove("/c/" + n)
		}
	}
	c.l = mustOpen(t, c.o)
	defer c.l.Close()
	sameOffsets(t, "after rescan", offsetsOf(c.readAll(c.l)), offsetsOf(got))
	if after := entriesMeta(t, c.l); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("entries changed after rescan:\n%v\n%v", before, after)
	}
	if got := lookups(t, c.l); got != answers {
		t.Fatalf("lookups changed after rescan:\n%s\n%s", answers, got)
	}
}

// lookups is what the log answers about terms, epochs and timestamps; compaction must not
// change any of it.
func lookups(t tT, l *Log) string {
	t.Helper()
	var b bytes.Buffer
	for i := l.FirstIndex() - 1; i <= l.LastIndex(); i++ {
		term, err := l.Term(i)
		fmt.Fprintf(&b, "term(%d)=%d,%v ", i, term, err)
	}
	for e := uint64(0); e <= l.LastTerm()+1; e++ {
		f, end, ok := l.EpochEndOffset(e)
		fmt.Fprintf(&b, "epoch(%d)=%d,%d,%v ", e, f, end, ok)
	}
	mt, moff := l.MaxTimestamp()
	fmt.Fprintf(&b, "max=%d@%d ", mt, moff)
	_, first, _ := l.OffsetForTimestamp(0) // the first batch's timestamp
	for _, ts := range append([]int64{-1, 0}, rangeInts(first-2, mt+2)...) {
		off, got, ok := l.OffsetForTimestamp(ts)
		fmt.Fprintf(&b, "ts(%d)=%d,%d,%v ", ts, off, got, ok)
	}
	return b.String()
}

func rangeInts(lo, hi int64) []int64 {
	if hi-lo > 10000 {
		panic("rangeInts: range too large")
	}
	var out []int64
	for v := lo; v < hi; v++ {
		out = append(out, v)
	}
	return out
}

// DefaultDeleteRetentionForTest is delete.retention.ms's default.
const DefaultDeleteRetentionForTest = 86400000

func TestCompactFetchAtRemovedOffsetReturnsNextSurvivor(t *testing.T) {
	c := newCtLog(t, 400)
	// offsets 0..2: a=1 b=1 a=2 | 3: b=2 | 4..5: c=1 a=3 | then filler to close segments.
	c.append(kafkatest.CodecNone, rec("a", "1"), rec("b", "1"), rec("a", "2"))
	c.append(kafkatest.CodecNone, rec("b", "2"))
	c.append(kafkatest.CodecNone, rec("c", "1"), rec("a", "3"))
	for i := 0; i < 20; i++ {
		c.append(kafkatest.CodecNone, rec(fmt.Sprint("z", i), "filler-filler-filler"))
	}
	end := closedEnd(c.l)
	c.compact(DefaultDeleteRetentionForTest)
	want := c.expected(end, noTombExpired)
	if want[0] != 3 {
		t.Fatalf("expected survivors %v", want)
	}
	// At every offset, removed or not, a fetch (continued past empty batches, as a client
	// does) first yields the first surviving record at or after it.
	for off := int64(0); off < c.l.LogEndOffset(); off++ {
		var first *readRec
		for next := off; first == nil && next < c.l.LogEndOffset(); {
			b, err := c.l.ReadBatches(next, 1, c.l.LogEndOffset())
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range c.checkBatches(b) {
				if r.off >= off {
					first = &r
					break
				}
			}
			bs := splitBatches(t, b)
			lastB := bs[len(bs)-1]
			next = recordbatch.BaseOffset(lastB) + int64(recordbatch.Records(lastB))
		}
		i := sort.Search(len(want), func(i int) bool { return want[i] >= off })
		if first == nil || first.off != want[i] {
			t.Fatalf("fetch at %d: first record %+v, want offset %d", off, first, want[i])
		}
	}
	// The batch holding offsets 0..2 survives as an empty batch with its offset range.
	b, _ := c.l.ReadBatches(1, 1, c.l.LogEndOffset())
	bs := splitBatches(t, b)
	if recordbatch.BaseOffset(bs[0]) != 0 || recordbatch.Records(bs[0]) != 3 || be.Uint32(bs[0][recordbatch.RecordCountPos:]) != 0 {
		t.Fatalf("first batch: base %d records %d num %d", recordbatch.BaseOffset(bs[0]), recordbatch.Records(bs[0]), be.Uint32(bs[0][recordbatch.RecordCountPos:]))
	}
	c.l.Close()
}

func TestCompactTombstonesExpireAfterDeleteRetention(t *testing.T) {
	const retention = 10_000
	c := newCtLog(t, 500)
	c.append(kafkatest.CodecNone, rec("a", "1"), rec("b", "1"))
	c.append(kafkatest.CodecNone, rec("a", "2"))
	for i := 0; i < 6; i++ {
		c.append(kafkatest.CodecNone, rec(fmt.Sprint("f", i), "filler-filler-filler-filler"))
	}
	c.append(kafkatest.CodecNone, tomb("a"))
	tombOff := c.l.LogEndOffset() - 1
	for i := 0; i < 12; i++ {
		c.append(kafkatest.CodecNone, rec(fmt.Sprint("g", i), "filler-filler-filler-filler"))
	}
	end := closedEnd(c.l)
	if tombOff >= end {
		t.Fatal("tombstone not in a closed segment")
	}
	start := c.clock.ms()
	// First round: every older value of a goes, the tombstone stays.
	c.compact(retention)
	got := c.readAll(c.l)
	sameOffsets(t, "first round", offsetsOf(got), c.expected(end, noTombExpired))
	for _, r := range got {
		if string(r.key) == "a" && r.off != tombOff {
			t.Fatalf("older a at %d survived", r.off)
		}
	}
	// Not yet expired: kept, and the round has nothing to do.
	c.clock.Advance(retention * time.Millisecond)
	if st := c.compact(retention); !st.Skipped {
		t.Fatalf("round before expiry not skipped: %+v", st)
	}
	sameOffsets(t, "at retention", offsetsOf(c.readAll(c.l)), c.expected(end, noTombExpired))
	// Past delete.retention.ms since the segment was first compacted: gone.
	c.clock.Advance(time.Millisecond)
	st := c.compact(retention)
	if st.TombstonesRemoved != 1 || st.Skipped {
		t.Fatalf("stats %+v", st)
	}
	sameOffsets(t, "after expiry", offsetsOf(c.readAll(c.l)), c.expected(end, func(int64) bool { return true }))
	if c.clock.ms()-start != retention+1 {
		t.Fatal("clock")
	}
	// A tombstone that is not the latest record of its key goes at once, like any
	// superseded record; a negative retention keeps the latest tombstones forever.
	c.append(kafkatest.CodecNone, tomb("b"))
	c.append(kafkatest.CodecNone, rec("b", "3"), tomb("c"))
	for i := 0; i < 12; i++ {
		c.append(kafkatest.CodecNone, rec(fmt.Sprint("h", i), "filler-filler-filler-filler"))
	}
	c.clock.Advance(time.Hour)
	c.compact(-1)
	end = closedEnd(c.l)
	got = c.readAll(c.l)
	sameOffsets(t, "negative retention", offsetsOf(got), c.expected(end, func(off int64) bool { return off == tombOff }))
	c.l.Close()
}

func TestCompactTombstoneClockSurvivesReopen(t *testing.T) {
	const retention = 5000
	c := newCtLog(t, 400)
	c.append(kafkatest.CodecNone, rec("a", "1"))
	c.append(kafkatest.CodecNone, tomb("a"))
	for i := 0; i < 12; i++ {
		c.append(kafkatest.CodecNone, rec(fmt.Sprint("f", i), "filler-filler-filler-filler"))
	}
	end := closedEnd(c.l)
	c.compact(retention)
	c.l.Close()
	// The first compaction's time is in the segment header: after a restart the round
	// reads everything again but keeps the tombstone until the same deadline.
	c.clock.Advance(retention * time.Millisecond)
	c.l = mustOpen(t, c.o)
	if st := c.compact(retention); st.Skipped || st.TombstonesRemoved != 0 {
		t.Fatalf("stats %+v", st)
	}
	sameOffsets(t, "kept", offsetsOf(c.readAll(c.l)), c.expected(end, noTombExpired))
	c.clock.Advance(time.Millisecond)
	if st := c.compact(retention); st.TombstonesRemoved != 1 {
		t.Fatalf("stats %+v", st)
	}
	c.l.Close()
}

func TestCompactCompressedBatches(t *testing.T) {
	type variant struct {
		codec  kafkatest.Codec
		xerial bool
	}
	vs := []variant{{kafkatest.CodecNone, false}, {kafkatest.CodecGzip, false}, {kafkatest.CodecSnappy, false},
		{kafkatest.CodecSnappy, true}, {kafkatest.CodecLZ4, false}, {kafkatest.CodecZstd, false}}
	for _, v := range vs {
		t.Run(fmt.Sprintf("%s-xerial=%v", v.codec, v.xerial), func(t *testing.T) {
			c := newCtLog(t, 2000)
			for i := 0; i < 30; i++ {
				var recs []kv
				for j := 0; j < 8; j++ {
					k := fmt.Sprint("key-", (i*8+j)%11)
					val := bytes.Repeat([]byte{byte('a' + j)}, 20+i)
					if (i+j)%13 == 0 {
						val = nil
					}
					recs = append(recs, kv{key: []byte(k), val: val})
				}
				if i%5 == 0 {
					recs = append(recs, kv{val: []byte("no key")})
				}
				e := Entry{Index: c.l.LastIndex() + 1, Term: 1, Type: EntryData, Data: kvBatch(c.clock.ms(), v.codec, v.xerial, recs...)}
				ents := []Entry{e}
				if err := c.l.Append(ents); err != nil {
					t.Fatal(err)
				}
				for j, r := range recs {
					c.recs[ents[0].BaseOffset+int64(j)] = storedRec{key: r.key, val: r.val, nullKey: r.key == nil, tomb: r.val == nil}
				}
			}
			end := closedEnd(c.l)
			st := c.compact(DefaultDeleteRetentionForTest)
			if st.RecordsRemoved == 0 || st.UndecodableBatches != 0 {
				t.Fatalf("stats %+v", st)
			}
			got := c.readAll(c.l) // decoded by the independent kafkatest codecs and kmsg
			sameOffsets(t, "compressed", offsetsOf(got), c.expected(end, noTombExpired))
			// Every batch that still holds records keeps its codec (and snappy its framing).
			b, _ := c.l.ReadBatches(0, 1<<30, c.l.LogEndOffset())
			for _, batch := range splitBatches(t, b) {
				var rb kmsg.RecordBatch
				if err := rb.ReadFrom(batch); err != nil {
					t.Fatal(err)
				}
				if rb.NumRecords > 0 && kafkatest.Codec(rb.Attributes&7) != v.codec {
					t.Fatalf("batch at %d has codec %d", rb.FirstOffset, rb.Attributes&7)
				}
				if v.codec == kafkatest.CodecSnappy && rb.NumRecords > 0 && recordbatch.XerialFramed(rb.Records) != v.xerial {
					t.Fatalf("batch at %d: xerial framing changed", rb.FirstOffset)
				}
			}
			c.l.Close()
		})
	}
}

func TestCompactLeavesWhatItCannotReadAsItIs(t *testing.T) {
	c := newCtLog(t, 500)
	c.append(kafkatest.CodecNone, rec("a", "1"))
	// A control batch and a batch whose records are garbage (a valid batch frame): kept.
	ctrl := kafkatest.Batch{Keys: [][]byte{[]byte("a")}, Values: [][]byte{[]byte("2")}, ProducerID: 5, ProducerEpoch: 0, Attributes: recordbatch.AttrControl | recordbatch.AttrTransactional}.Bytes()
	garbage := kvBatch(c.clock.ms(), kafkatest.CodecNone, false, rec("a", "3"))
	garbage[recordbatch.HeaderSize] = 0x7f // the first record's length varint now claims too much
	recordbatch.SetCRC(garbage)
	zbad := kvBatch(c.clock.ms(), kafkatest.CodecZstd, false, rec("a", "4"))
	zbad[len(zbad)-3] ^= 0xff
	recordbatch.SetCRC(zbad)
	for _, d := range [][]byte{ctrl, garbage, zbad} {
		if err := c.l.Append([]Entry{{Index: c.l.LastIndex() + 1, Term: 1, Type: EntryData, Data: d}}); err != nil {
			t.Fatal(err)
		}
	}
	c.append(kafkatest.CodecNone, rec("a", "5"))
	for i := 0; i < 12; i++ {
		c.append(kafkatest.CodecNone, rec(fmt.Sprint("f", i), "filler-filler-filler-filler"))
	}
	before, _ := c.l.Entries(2, 5, 1<<30)
	st := c.compact(DefaultDeleteRetentionForTest)
	if st.UndecodableBatches != 2 || st.RecordsRemoved != 1 {
		t.Fatalf("stats %+v", st)
	}
	after, _ := c.l.Entries(2, 5, 1<<30)
	for i := range before {
		if !bytes.Equal(before[i].Data, after[i].Data) {
			t.Fatalf("entry %d changed", before[i].Index)
		}
	}
	c.l.Close()
}

func TestCompactOnlyClosedSegmentsBelowUpTo(t *testing.T) {
	c := newCtLog(t, 400)
	for i := 0; i < 40; i++ {
		c.append(kafkatest.CodecNone, rec(fmt.Sprint("k", i%3), fmt.Sprint("value-", i)))
	}
	c.flush()
	c.l.mu.RLock()
	segs := append([]*segment(nil), c.l.segs...)
	c.l.mu.RUnlock()
	if len(segs) < 4 {
		t.Fatalf("%d segments", len(segs))
	}
	// UpTo inside the second segment: only the first is compacted, against its own keys.
	upTo := segs[1].baseOffset + 1
	st, err := c.l.Compact(CompactOptions{DeleteRetentionMs: 1000, UpTo: upTo})
	if err != nil || st.SegmentsScanned != 1 {
		t.Fatalf("Compact: %+v %v", st, err)
	}
	sameOffsets(t, "first segment only", offsetsOf(c.readAll(c.l)), c.expected(segs[1].baseOffset, noTombExpired))
	// UpTo <= 0 compacts nothing; the active segment never is, whatever UpTo says.
	if st, _ := c.l.Compact(CompactOptions{UpTo: 0}); !st.Skipped {
		t.Fatalf("UpTo 0: %+v", st)
	}
	if _, err := c.l.Compact(CompactOptions{DeleteRetentionMs: 1000, UpTo: 1 << 40}); err != nil {
		t.Fatal(err)
	}
	sameOffsets(t, "all closed", offsetsOf(c.readAll(c.l)), c.expected(closedEnd(c.l), noTombExpired))
	// Unflushed closed segments wait for their flush.
	for i := 0; i < 20; i++ {
		c.append(kafkatest.CodecNone, rec(fmt.Sprint("k", i%3), fmt.Sprint("later-", i)))
	}
	end := closedEnd(c.l)
	if st, _ := c.l.Compact(CompactOptions{DeleteRetentionMs: 1000, UpTo: 1 << 40}); !st.Skipped {
		t.Fatalf("unflushed: %+v", st)
	}
	c.compact(1000)
	sameOffsets(t, "after flush", offsetsOf(c.readAll(c.l)), c.expected(end, noTombExpired))
	c.l.Close()
}

// ---- crash safety ----

var errPowerCut = errors.New("test: power cut")

// cutFS counts the mutating operations on a MemFS and, once armed, cuts the power just
// before the at-th one: MemFS.Crash, and every operation from then on fails.
type cutFS struct {
	*MemFS
	mu      sync.Mutex
	armed   bool
	at, n   int
	crashed bool
	torn    *rand.Rand // if set, the power cut keeps a random part of unsynced changes
}

func (c *cutFS) step() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.armed {
		return nil
	}
	if c.crashed {
		return errPowerCut
	}
	c.n++
	if c.n == c.at {
		c.crashed = true
		if c.torn != nil {
			c.MemFS.CrashWithTornWrites(c.torn)
		} else {
			c.MemFS.Crash()
		}
		return errPowerCut
	}
	return nil
}

func (c *cutFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC) != 0 {
		if err := c.step(); err != nil {
			return nil, err
		}
	}
	f, err := c.MemFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &cutFile{File: f, fs: c}, nil
}

func (c *cutFS) Remove(name string) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.MemFS.Remove(name)
}

func (c *cutFS) Rename(o, n string) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.MemFS.Rename(o, n)
}

func (c *cutFS) SyncDir(name string) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.MemFS.SyncDir(name)
}

type cutFile struct {
	File
	fs *cutFS
}

func (f *cutFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.step(); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *cutFile) Sync() error {
	if err := f.fs.step(); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *cutFile) Truncate(size int64) error {
	if err := f.fs.step(); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// buildCrashLog writes the same log into fs every time: keys overwritten across segments,
// tombstones, compressed and empty-to-be batches, internal entries and term changes.
func buildCrashLog(t tT, fs FS, clock *fakeClock) (*Log, Options, map[int64]storedRec) {
	o := Options{FS: fs, Dir: "/x", SegmentBytes: 700, IndexIntervalBytes: 100, Now: clock.Now}
	l := mustOpen(t, o)
	recs := map[int64]storedRec{}
	codecs := kafkatest.Codecs
	term := uint64(1)
	for i := 0; i < 45; i++ {
		var b []kv
		for j := 0; j <= i%3; j++ {
			k := fmt.Sprint("k", (i*3+j)%7)
			switch {
			case (i+j)%11 == 0:
				b = append(b, tomb(k))
			default:
				b = append(b, rec(k, fmt.Sprint("v", i, "-", j)))
			}
		}
		ents := []Entry{{Index: l.LastIndex() + 1, Term: term, Type: EntryData, Data: kvBatch(clock.ms()+int64(i), codecs[i%len(codecs)], i%2 == 0, b...)}}
		if err := l.Append(ents); err != nil {
			t.Fatal(err)
		}
		for j, r := range b {
			recs[ents[0].BaseOffset+int64(j)] = storedRec{key: r.key, val: r.val, tomb: r.val == nil}
		}
		if i%10 == 9 {
			term++
			if err := l.Append([]Entry{{Index: l.LastIndex() + 1, Term: term, Type: EntryInternal, Data: []byte("leader")}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	return l, o, recs
}

func allEntries(t tT, l *Log) []Entry {
	t.Helper()
	ents, err := l.Entries(l.FirstIndex(), l.LastIndex()+1, 1<<62)
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	return ents
}

func TestCompactCrashAtEveryStepLeavesOldOrNew(t *testing.T) {
	// Two rounds: the first compacts (and starts the tombstone clocks), the second, after
	// delete.retention.ms, removes the tombstones. Crash inside each at every step.
	const retention = 1000
	for round := 1; round <= 2; round++ {
		// Reference: the states before and after the round, without a crash.
		clock := newClock()
		ref, _, recs := buildCrashLog(t, NewMemFS(), clock)
		if round == 2 {
			if _, err := ref.Compact(CompactOptions{DeleteRetentionMs: retention, UpTo: 1 << 40}); err != nil {
				t.Fatal(err)
			}
			clock.Advance(2 * retention * time.Millisecond)
		}
		old := allEntries(t, ref)
		// The latest value of every key, as the log holds it before the round.
		c := &ctLog{t: t, recs: recs}
		latestBefore := latestValues(c.readAll(ref))
		st, err := ref.Compact(CompactOptions{DeleteRetentionMs: retention, UpTo: 1 << 40})
		if err != nil || st.SegmentsRewritten < 3-round {
			t.Fatalf("round %d reference: %+v %v", round, st, err)
		}
		if round == 2 && st.TombstonesRemoved == 0 {
			t.Fatalf("round 2 removed no tombstone: %+v", st)
		}
		compacted := allEntries(t, ref)
		ref.Close()

		mixed := 0
	steps:
		for at := 1; ; at++ {
			for _, torn := range []bool{false, true} {
				clock := newClock()
				fs := &cutFS{MemFS: NewMemFS()}
				if torn {
					fs.torn = rand.New(rand.NewPCG(uint64(at), uint64(round)))
				}
				l, o, _ := buildCrashLog(t, fs, clock)
				if round == 2 {
					if _, err := l.Compact(CompactOptions{DeleteRetentionMs: retention, UpTo: 1 << 40}); err != nil {
						t.Fatal(err)
					}
					clock.Advance(2 * retention * time.Millisecond)
				}
				fs.mu.Lock()
				fs.armed, fs.at = true, at
				fs.mu.Unlock()
				_, err := l.Compact(CompactOptions{DeleteRetentionMs: retention, UpTo: 1 << 40})
				fs.mu.Lock()
				crashed := fs.crashed
				fs.mu.Unlock()
				if !crashed {
					if err != nil {
						t.Fatalf("round %d: Compact without a crash: %v", round, err)
					}
					if at < 12 {
						t.Fatalf("round %d: only %d steps", round, at)
					}
					l.Close()
					break steps
				}
				if err == nil {
					t.Fatalf("round %d step %d: Compact succeeded through a power cut", round, at)
				}
				o.FS = fs.MemFS
				l2, err := Open(o)
				if err != nil {
					t.Fatalf("round %d step %d: Open: %v", round, at, err)
				}
				if checkOldOrNew(t, l2, old, compacted, fmt.Sprintf("round %d step %d torn %v", round, at, torn)) {
					mixed++
				}
				got := latestValues(c.readAll(l2))
				if !sameExceptDeleted(got, latestBefore) {
					t.Fatalf("round %d step %d: latest values\n got %v\nwant %v", round, at, got, latestBefore)
				}
				// The log carries on: a full compaction now reaches the reference result.
				if _, err := l2.Compact(CompactOptions{DeleteRetentionMs: retention, UpTo: 1 << 40, Now: clock.Now}); err != nil {
					t.Fatalf("round %d step %d: Compact after recovery: %v", round, at, err)
				}
				if round == 1 {
					checkOldOrNew(t, l2, compacted, compacted, fmt.Sprintf("round %d step %d, recompacted", round, at))
				}
				names, _ := fs.MemFS.ReadDir("/x")
				for _, n := range names {
					if len(n) > 4 && n[len(n)-4:] == tmpSuffix {
						t.Fatalf("round %d step %d: %s left behind", round, at, n)
					}
				}
				l2.Close()
			}
		}
		if round == 1 && mixed == 0 {
			t.Fatal("no crash left some segments compacted and others not")
		}
	}
}

// latestValues maps each key to its last value read ("<tombstone>" for a tombstone).
func latestValues(rs []readRec) map[string]string {
	out := map[string]string{}
	for _, r := range rs {
		if r.key == nil {
			continue
		}
		if r.val == nil {
			out[string(r.key)] = "<tombstone>"
		} else {
			out[string(r.key)] = string(r.val)
		}
	}
	return out
}

// sameExceptDeleted: got equals want except that keys whose latest record is a tombstone
// in want may be missing from got (the tombstone expired).
func sameExceptDeleted(got, want map[string]string) bool {
	for k, v := range want {
		g, ok := got[k]
		if ok && g != v || !ok && v != "<tombstone>" {
			return false
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			return false
		}
	}
	return true
}

// checkOldOrNew checks that the recovered log has exactly the entries of old (indexes,
// terms, offsets) and that each of its segments holds either the old or the compacted
// version of every entry in it, never a mix. It reports whether the log as a whole was
// part old, part compacted.
func checkOldOrNew(t *testing.T, l *Log, old, compacted []Entry, what string) bool {
	t.Helper()
	got := allEntries(t, l)
	if len(got) != len(old) {
		t.Fatalf("%s: %d entries, want %d", what, len(got), len(old))
	}
	l.mu.RLock()
	segs := append([]*segment(nil), l.segs...)
	l.mu.RUnlock()
	first := old[0].Index
	var sawOld, sawNew bool
	for _, s := range segs {
		isOld, isNew := true, true
		for idx := s.baseIndex; idx <= s.lastIndex; idx++ {
			g, o, n := got[idx-first], old[idx-first], compacted[idx-first]
			if g.Index != o.Index || g.Term != o.Term || g.BaseOffset != o.BaseOffset || g.Records != o.Records || g.MaxTimestamp != o.MaxTimestamp {
				t.Fatalf("%s: entry %s, want %s", what, summary(g), summary(o))
			}
			isOld = isOld && bytes.Equal(g.Data, o.Data)
			isNew = isNew && bytes.Equal(g.Data, n.Data)
		}
		if !isOld && !isNew {
			t.Fatalf("%s: segment %d mixes old and compacted entries", what, s.baseIndex)
		}
		sawOld = sawOld || isOld && !isNew
		sawNew = sawNew || isNew && !isOld
	}
	for i, e := range got {
		if e.Type == EntryData && !kafkaCRCOK(e.Data) {
			t.Fatalf("%s: entry %d has a bad Kafka CRC", what, got[i].Index)
		}
	}
	return sawOld && sawNew
}

func TestCompactOnOSFS(t *testing.T) {
	c := newCtLog(t, 500)
	c.l.Close()
	c.o.FS, c.o.Dir = OSFS(), t.TempDir()
	c.l = mustOpen(t, c.o)
	for i := 0; i < 40; i++ {
		c.append(kafkatest.Codecs[i%5], rec(fmt.Sprint("k", i%4), fmt.Sprint("value-", i)), tomb(fmt.Sprint("t", i%3)))
	}
	end := closedEnd(c.l)
	// A reader in the middle of a segment while it is swapped keeps reading the old file.
	c.flush()
	c.l.mu.RLock()
	pn := c.l.pinLocked(0, func(s *segment) point { return s.start() })
	done := make(chan CompactStats)
	go func() {
		st, err := c.l.Compact(CompactOptions{DeleteRetentionMs: 1000, UpTo: 1 << 40})
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	time.Sleep(20 * time.Millisecond)
	out, err := c.l.readSegmentBatches(pn, &batchSelection{next: pn.from.offset, maxBytes: 1 << 20, upTo: 1 << 40}, nil)
	pn.unpin()
	if err != nil {
		t.Fatal(err)
	}
	c.checkBatches(out)
	if st := <-done; st.SegmentsRewritten == 0 {
		t.Fatalf("stats %+v", st)
	}
	sameOffsets(t, "os", offsetsOf(c.readAll(c.l)), c.expected(end, noTombExpired))
	if err := c.l.Close(); err != nil {
		t.Fatal(err)
	}
	c.l = mustOpen(t, c.o)
	sameOffsets(t, "os reopen", offsetsOf(c.readAll(c.l)), c.expected(end, noTombExpired))
	c.l.Close()
}

// hookFS calls onTmp (once) when a compacted copy is created, between the round's reads
// and its swap.
type hookFS struct {
	*MemFS
	onTmp func()
}

func (h *hookFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if fn := h.onTmp; fn != nil && flag&os.O_CREATE != 0 && len(name) > 8 && name[len(name)-8:] == ".log.tmp" {
		h.onTmp = nil
		fn()
	}
	return h.MemFS.OpenFile(name, flag, perm)
}

func TestCompactYieldsToStructuralOps(t *testing.T) {
	ops := map[string]func(c *ctLog){
		"retention": func(c *ctLog) {
			if _, err := c.l.EnforceRetention(-1, 1); err != nil {
				t.Fatal(err)
			}
		},
		"truncate": func(c *ctLog) {
			if err := c.l.TruncateSuffix(3); err != nil {
				t.Fatal(err)
			}
		},
		"truncate and regrow": func(c *ctLog) {
			if err := c.l.TruncateSuffix(3); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 30; i++ {
				c.append(kafkatest.CodecNone, rec("other", fmt.Sprint("regrown-value-", i)))
			}
			c.flush()
		},
		"reset": func(c *ctLog) {
			if err := c.l.Reset(1000, 5, 5000); err != nil {
				t.Fatal(err)
			}
			c.term = 5
		},
		"close": func(c *ctLog) { c.l.Close() },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			c := newCtLog(t, 500)
			c.l.Close()
			h := &hookFS{MemFS: c.fs}
			c.o.FS = h
			c.l = mustOpen(t, c.o)
			for i := 0; i < 40; i++ {
				c.append(kafkatest.CodecNone, rec(fmt.Sprint("k", i%3), fmt.Sprint("value-", i)))
			}
			c.flush()
			h.onTmp = func() { op(c) }
			st, err := c.l.Compact(CompactOptions{DeleteRetentionMs: 1000, UpTo: 1 << 40})
			if name == "close" {
				if !errors.Is(err, ErrClosed) {
					t.Fatalf("Compact after Close: %v", err)
				}
				c.l = mustOpen(t, c.o)
			} else if err != nil || st.SegmentsRewritten != 0 {
				t.Fatalf("Compact: %+v %v", st, err)
			}
			// No temporary file is left, the log reads back intact, now and after a reopen,
			// and a later round compacts normally.
			names, _ := c.fs.ReadDir("/c")
			for _, n := range names {
				if len(n) > 4 && n[len(n)-4:] == tmpSuffix {
					t.Fatalf("%s left behind", n)
				}
			}
			for off := range c.recs {
				if off >= c.l.LogEndOffset() {
					delete(c.recs, off)
				}
			}
			before := c.readAll(c.l)
			c.l.Close()
			c.l = mustOpen(t, c.o)
			sameOffsets(t, "reopen", offsetsOf(c.readAll(c.l)), offsetsOf(before))
			for i := 0; i < 30; i++ {
				c.append(kafkatest.CodecNone, rec(fmt.Sprint("k", i%3), fmt.Sprint("later-", i)))
			}
			end := closedEnd(c.l)
			c.compact(1000)
			lso := c.l.LogStartOffset()
			var want []int64
			for _, off := range c.expected(end, noTombExpired) {
				if off >= lso {
					want = append(want, off)
				}
			}
			sameOffsets(t, "later round", offsetsOf(c.readAll(c.l)), want)
			c.l.Close()
		})
	}
}

// ---- concurrency ----

func TestCompactConcurrentWithAppendFlushAndReads(t *testing.T) {
	c := newCtLog(t, 1500)
	var recsMu sync.Mutex
	stop := make(chan struct{})
	var writer, others sync.WaitGroup
	// Writer: keys overwritten all the time, some tombstones, every codec.
	writer.Add(1)
	go func() {
		defer writer.Done()
		for i := 0; i < 600; i++ {
			var b []kv
			for j := 0; j < 1+i%4; j++ {
				k := fmt.Sprint("k", (i+j*5)%17)
				if (i+j)%19 == 0 {
					b = append(b, tomb(k))
				} else {
					b = append(b, rec(k, fmt.Sprint("v", i, ".", j)))
				}
			}
			ents := []Entry{{Index: c.l.LastIndex() + 1, Term: 1, Type: EntryData, Data: kvBatch(int64(i), kafkatest.Codecs[i%5], i%2 == 1, b...)}}
			recsMu.Lock()
			err := c.l.Append(ents)
			for j, r := range b {
				c.recs[ents[0].BaseOffset+int64(j)] = storedRec{key: r.key, val: r.val, tomb: r.val == nil}
			}
			recsMu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
			if i%7 == 0 {
				if err := c.l.Flush(); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	// Compactor: tombstones expire at once, so batches empty out too.
	var rounds, rewritten int
	others.Add(1)
	go func() {
		defer others.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			st, err := c.l.Compact(CompactOptions{DeleteRetentionMs: 0, UpTo: c.l.LogEndOffset(), Now: time.Now})
			if err != nil {
				t.Error(err)
				return
			}
			rounds++
			rewritten += st.SegmentsRewritten
		}
	}()
	// Readers: whatever they read is intact and is what was written at that offset.
	for r := 0; r < 3; r++ {
		others.Add(1)
		go func(r int) {
			defer others.Done()
			check := &ctLog{t: t}
			rng := rand.New(rand.NewPCG(uint64(r), 3))
			for {
				select {
				case <-stop:
					return
				default:
				}
				leo := c.l.LogEndOffset()
				if leo == 0 {
					continue
				}
				b, err := c.l.ReadBatches(rng.Int64N(leo), 1+rng.IntN(20000), leo)
				if err != nil {
					t.Error(err)
					return
				}
				recsMu.Lock()
				check.recs = maps.Clone(c.recs)
				recsMu.Unlock()
				check.checkBatches(b)
				if mt, _ := c.l.MaxTimestamp(); mt >= 0 {
					if _, _, ok := c.l.OffsetForTimestamp(rng.Int64N(mt + 1)); !ok {
						t.Error("OffsetForTimestamp found nothing")
						return
					}
				}
				if _, err := c.l.Entries(c.l.FirstIndex(), c.l.LastIndex()+1, 1<<20); err != nil {
					t.Error(err)
					return
				}
			}
		}(r)
	}
	writer.Wait()
	close(stop)
	others.Wait()
	if t.Failed() {
		return
	}
	if rounds == 0 || rewritten == 0 {
		t.Fatalf("%d rounds rewrote %d segments", rounds, rewritten)
	}
	c.compact(0)
	c.clock.t = time.Now().Add(time.Hour)
	c.compact(0)
	sameOffsets(t, "final", offsetsOf(c.readAll(c.l)), c.expected(closedEnd(c.l), func(int64) bool { return true }))
	c.l.Close()
}

// ---- property test ----

func TestRapidCompactionModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := newCtLog(rt, int64(rapid.IntRange(300, 3000).Draw(rt, "segmentBytes")))
		c.o.IndexIntervalBytes = rapid.IntRange(1, 500).Draw(rt, "interval")
		c.l.Close()
		c.l = mustOpen(rt, c.o)
		defer func() { c.l.Close() }()
		retention := int64(rapid.IntRange(0, 5000).Draw(rt, "retention"))
		nkeys := rapid.IntRange(1, 12).Draw(rt, "keys")
		// model: the value of every key as last written, and whether it was ever compacted
		// away (a key whose latest record is an expired tombstone may vanish).
		rt.Repeat(map[string]func(*rapid.T){
			"append": func(rt *rapid.T) {
				n := rapid.IntRange(1, 6).Draw(rt, "n")
				var b []kv
				for i := 0; i < n; i++ {
					k := []byte(fmt.Sprint("key", rapid.IntRange(0, nkeys-1).Draw(rt, "key")))
					switch rapid.IntRange(0, 9).Draw(rt, "kind") {
					case 0:
						b = append(b, kv{key: k})
					case 1:
						b = append(b, kv{val: []byte("keyless")})
					default:
						b = append(b, kv{key: k, val: bytes.Repeat([]byte{byte(c.l.LogEndOffset())}, rapid.IntRange(0, 80).Draw(rt, "size"))})
					}
				}
				c.append(kafkatest.Codecs[rapid.IntRange(0, 4).Draw(rt, "codec")], b...)
			},
			"internal": func(rt *rapid.T) { c.term++; c.internal() },
			"flush":    func(rt *rapid.T) { c.flush() },
			"advance": func(rt *rapid.T) {
				c.clock.Advance(time.Duration(rapid.IntRange(0, 3000).Draw(rt, "ms")) * time.Millisecond)
			},
			"compact": func(rt *rapid.T) {
				before := latestValues(c.readAll(c.l))
				leo := c.l.LogEndOffset()
				st := c.compact(retention)
				if c.l.LogEndOffset() != leo {
					rt.Fatalf("log end moved")
				}
				after := latestValues(c.readAll(c.l))
				if !sameExceptDeleted(after, before) {
					rt.Fatalf("latest values changed:\n before %v\n after %v\n%+v", before, after, st)
				}
				// Below the last closed segment at most one record per key is left, and no
				// keyless record.
				end := closedEnd(c.l)
				seen := map[string]bool{}
				for _, r := range c.readAll(c.l) {
					if r.off >= end {
						break
					}
					if r.key == nil || seen[string(r.key)] {
						rt.Fatalf("offset %d: key %q left twice or keyless", r.off, r.key)
					}
					seen[string(r.key)] = true
				}
			},
			"reopen": func(rt *rapid.T) {
				before := c.readAll(c.l)
				if err := c.l.Close(); err != nil {
					rt.Fatal(err)
				}
				c.l = mustOpen(rt, c.o)
				sameOffsets(rt, "reopen", offsetsOf(c.readAll(c.l)), offsetsOf(before))
			},
			"crash": func(rt *rapid.T) {
				c.fs.Crash()
				l, err := Open(c.o)
				if err != nil {
					rt.Fatal(err)
				}
				c.l = l
				// Records lost with the unflushed tail are forgotten.
				for off := range c.recs {
					if off >= l.LogEndOffset() {
						delete(c.recs, off)
					}
				}
				c.readAll(l)
			},
		})
	})
}
