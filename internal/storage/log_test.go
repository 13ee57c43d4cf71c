package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

func TestAppendAssignsOffsetsAndPatches(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, memOpts(fs, "/d/p0"))
	defer l.Close()
	if l.FirstIndex() != 1 || l.LastIndex() != 0 || l.LogEndOffset() != 0 || l.LastTerm() != 0 {
		t.Fatalf("empty log: first %d last %d leo %d", l.FirstIndex(), l.LastIndex(), l.LogEndOffset())
	}
	if ts, off := l.MaxTimestamp(); ts != -1 || off != -1 {
		t.Fatalf("MaxTimestamp of empty log = %d, %d", ts, off)
	}
	b1 := makeBatch(3, 1000, 10, 1)
	orig := append([]byte(nil), b1...)
	ents := []Entry{
		{Index: 1, Term: 1, Type: EntryInternal},
		{Index: 2, Term: 1, Type: EntryData, Data: b1},
		{Index: 3, Term: 2, Type: EntryInternal, Data: []byte("conf")},
		{Index: 4, Term: 2, Type: EntryData, Data: makeBatch(1, 2000, 5, 2)},
	}
	if err := l.Append(ents); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		base int64
		recs int32
		ts   int64
	}{{0, 0, -1}, {0, 3, 1002}, {3, 0, -1}, {3, 1, 2000}}
	for i, w := range want {
		e := ents[i]
		if e.BaseOffset != w.base || e.Records != w.recs || e.MaxTimestamp != w.ts {
			t.Fatalf("entry %d: base %d recs %d ts %d, want %+v", i, e.BaseOffset, e.Records, e.MaxTimestamp, w)
		}
	}
	if !bytes.Equal(b1, orig) {
		t.Fatal("Append modified the caller's Data")
	}
	if l.LogEndOffset() != 4 || l.LastIndex() != 4 || l.LastTerm() != 2 {
		t.Fatalf("leo %d last %d term %d", l.LogEndOffset(), l.LastIndex(), l.LastTerm())
	}
	got, err := l.ReadBatches(0, 1<<20, 100)
	if err != nil {
		t.Fatal(err)
	}
	bs := splitBatches(t, got)
	if len(bs) != 2 {
		t.Fatalf("%d batches", len(bs))
	}
	if recordbatch.BaseOffset(bs[1]) != 3 || int32(be.Uint32(bs[1][recordbatch.LeaderEpochPos:])) != 2 || int32(be.Uint32(bs[0][recordbatch.LeaderEpochPos:])) != 1 {
		t.Fatalf("patched fields: base %d epochs %d %d", recordbatch.BaseOffset(bs[1]), int32(be.Uint32(bs[0][recordbatch.LeaderEpochPos:])), int32(be.Uint32(bs[1][recordbatch.LeaderEpochPos:])))
	}
	if l.UnflushedBytes() == 0 || l.FlushedIndex() != 0 || l.FlushedOffset() != 0 {
		t.Fatalf("before flush: unflushed %d flushedIndex %d", l.UnflushedBytes(), l.FlushedIndex())
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if l.UnflushedBytes() != 0 || l.FlushedIndex() != 4 || l.FlushedOffset() != 4 {
		t.Fatalf("after flush: unflushed %d flushedIndex %d flushedOffset %d", l.UnflushedBytes(), l.FlushedIndex(), l.FlushedOffset())
	}
	if ts, off := l.MaxTimestamp(); ts != 2000 || off != 3 {
		t.Fatalf("MaxTimestamp = %d, %d", ts, off)
	}
}

func TestAppendRejectsAtomically(t *testing.T) {
	l := mustOpen(t, memOpts(NewMemFS(), "/d"))
	defer l.Close()
	m := newModel()
	m.append(t, l, m.data(2, 2, 1, 10))
	cases := []struct {
		name string
		ents []Entry
		err  error
	}{
		{"gap", []Entry{{Index: 3, Term: 2, Type: EntryInternal}}, ErrNotContiguous},
		{"gap second", []Entry{m.internal(2, ""), {Index: 4, Term: 2, Type: EntryInternal}}, ErrNotContiguous},
		{"term down", []Entry{m.internal(2, ""), {Index: 3, Term: 1, Type: EntryInternal}}, ErrTermRegression},
		{"short batch", []Entry{m.internal(2, ""), {Index: 3, Term: 2, Type: EntryData, Data: make([]byte, 60)}}, ErrInvalidBatch},
		{"bad length", []Entry{{Index: 2, Term: 2, Type: EntryData, Data: append(makeBatch(1, 1, 1, 1), 0)}}, ErrInvalidBatch},
		{"bad type", []Entry{{Index: 2, Term: 2, Type: 7}}, ErrInvalidBatch},
	}
	for _, c := range cases {
		if err := l.Append(c.ents); !errors.Is(err, c.err) {
			t.Fatalf("%s: err %v, want %v", c.name, err, c.err)
		}
		m.check(t, l)
	}
}

// readAll checks ReadBatches at every offset against the model.
func checkReadsEverywhere(t *testing.T, l *Log, m *model) {
	t.Helper()
	for off := m.lso; off < m.leo(); off++ {
		for _, maxBytes := range []int{0, 100, 2000, 1 << 30} {
			for _, upTo := range []int64{off + 1, off + 7, m.leo()} {
				got, err := l.ReadBatches(off, maxBytes, upTo)
				if err != nil {
					t.Fatalf("ReadBatches(%d, %d, %d): %v", off, maxBytes, upTo, err)
				}
				if want := m.expectRead(off, maxBytes, upTo); !bytes.Equal(got, want) {
					t.Fatalf("ReadBatches(%d, %d, %d): got %d bytes, want %d", off, maxBytes, upTo, len(got), len(want))
				}
			}
		}
	}
}

func TestReadBatchesSemantics(t *testing.T) {
	l := mustOpen(t, Options{FS: NewMemFS(), Dir: "/d", SegmentBytes: 1500, IndexIntervalBytes: 200})
	defer l.Close()
	m := newModel()
	ts := int64(100)
	for i := 0; i < 40; i++ {
		n := 1 + i%5
		if i%7 == 3 {
			m.append(t, l, m.internal(1, "x"))
		}
		m.append(t, l, m.data(1, n, ts, 20+i%3*40))
		ts += int64(n)
	}
	if n := len(l.segs); n < 4 {
		t.Fatalf("only %d segments; want several", n)
	}
	checkReadsEverywhere(t, l, m)

	// Mid-batch fetch returns the whole batch.
	i, _ := m.batchAt(m.ents[len(m.ents)-1].BaseOffset)
	e := m.ents[i]
	if e.Records > 1 {
		got, _ := l.ReadBatches(e.BaseOffset+1, 0, m.leo())
		if !bytes.Equal(got, e.Data) {
			t.Fatal("mid-batch fetch did not return the containing batch")
		}
	}
	// Boundaries.
	if got, err := l.ReadBatches(m.leo(), 100, 1<<40); got != nil || err != nil {
		t.Fatalf("read at log end: %v %v", got, err)
	}
	if _, err := l.ReadBatches(m.leo()+1, 100, 1<<40); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read beyond log end: %v", err)
	}
	if _, err := l.ReadBatches(-1, 100, 1<<40); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	if got, err := l.ReadBatches(5, 100, 5); got != nil || err != nil {
		t.Fatalf("read at upTo: %v %v", got, err)
	}
	// Segment boundaries: the first and last offset of every segment and the boundary.
	for _, s := range l.segs {
		for _, off := range []int64{s.baseOffset, s.endOffset - 1, s.endOffset} {
			if off < 0 || off >= m.leo() {
				continue
			}
			got, err := l.ReadBatches(off, 1, m.leo())
			if err != nil {
				t.Fatal(err)
			}
			bs := splitBatches(t, got)
			if len(bs) != 1 {
				t.Fatalf("offset %d: %d batches with maxBytes 1", off, len(bs))
			}
			if b := recordbatch.BaseOffset(bs[0]); b > off || b+int64(recordbatch.Records(bs[0])) <= off {
				t.Fatalf("offset %d: got batch %d+%d", off, b, recordbatch.Records(bs[0]))
			}
		}
	}
	// The result is a private copy.
	got, _ := l.ReadBatches(0, 1<<20, m.leo())
	clear(got)
	m.check(t, l)
}

// countingFS counts bytes read through ReadAt.
type countingFS struct {
	FS
	read atomic.Int64
}

type countingFile struct {
	File
	fs *countingFS
}

func (c *countingFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, fs: c}, nil
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.fs.read.Add(int64(n))
	return n, err
}

func TestReadUsesSparseIndex(t *testing.T) {
	cfs := &countingFS{FS: NewMemFS()}
	l := mustOpen(t, Options{FS: cfs, Dir: "/d", IndexIntervalBytes: 4096})
	defer l.Close()
	m := newModel()
	for i := 0; i < 2000; i++ { // ~2000 * 1.1 KiB in one segment
		m.append(t, l, m.data(1, 1, int64(i), 1000))
	}
	if len(l.segs) != 1 {
		t.Fatalf("%d segments", len(l.segs))
	}
	for _, off := range []int64{1999, 1500, 1000} {
		before := cfs.read.Load()
		got, err := l.ReadBatches(off, 1, m.leo())
		if err != nil || len(got) == 0 {
			t.Fatalf("read %d: %v", off, err)
		}
		if n := cfs.read.Load() - before; n > 200<<10 {
			t.Fatalf("reading offset %d read %d bytes of a %d-byte segment", off, n, l.SizeBytes())
		}
		before = cfs.read.Load()
		ents, err := l.Entries(uint64(off)+1, uint64(off)+2, 1)
		if err != nil || len(ents) != 1 || ents[0].BaseOffset != off {
			t.Fatalf("Entries(%d): %v %v", off+1, ents, err)
		}
		if n := cfs.read.Load() - before; n > 200<<10 {
			t.Fatalf("Entries for index %d read %d bytes", off+1, n)
		}
		before = cfs.read.Load()
		o, ts, ok := l.OffsetForTimestamp(off)
		if !ok || o != off || ts != off {
			t.Fatalf("OffsetForTimestamp(%d) = %d %d %v", off, o, ts, ok)
		}
		if n := cfs.read.Load() - before; n > 200<<10 {
			t.Fatalf("OffsetForTimestamp(%d) read %d bytes", off, n)
		}
	}
}

func TestEntriesAndTerm(t *testing.T) {
	l := mustOpen(t, Options{FS: NewMemFS(), Dir: "/d", SegmentBytes: 600, IndexIntervalBytes: 100})
	defer l.Close()
	m := newModel()
	if term, err := l.Term(0); err != nil || term != 0 {
		t.Fatalf("Term(0) on empty log = %d, %v", term, err)
	}
	if _, err := l.Term(1); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Term(1) on empty log: %v", err)
	}
	for term := uint64(1); term <= 4; term++ {
		m.append(t, l, m.internal(term, ""))
		for i := 0; i < 5; i++ {
			m.append(t, l, m.data(term, 2, 10, 50))
		}
	}
	for _, e := range m.ents {
		term, err := l.Term(e.Index)
		if err != nil || term != e.Term {
			t.Fatalf("Term(%d) = %d, %v; want %d", e.Index, term, err, e.Term)
		}
	}
	if _, err := l.Term(m.lastIndex() + 1); !errors.Is(err, ErrUnavailable) {
		t.Fatal(err)
	}
	if _, err := l.Entries(1, m.lastIndex()+2, 1<<30); !errors.Is(err, ErrUnavailable) {
		t.Fatal(err)
	}
	if _, err := l.Entries(0, 3, 1<<30); !errors.Is(err, ErrCompacted) {
		t.Fatal(err)
	}
	// maxBytes: at least one entry; otherwise stop before exceeding.
	ents, err := l.Entries(2, 10, 1)
	if err != nil || len(ents) != 1 || ents[0].Index != 2 {
		t.Fatalf("Entries with maxBytes 1: %v %v", len(ents), err)
	}
	sz := uint64(len(m.ents[1].Data)+entryHeaderSize) + uint64(len(m.ents[2].Data)+entryHeaderSize)
	if ents, _ := l.Entries(2, 10, sz); len(ents) != 2 {
		t.Fatalf("Entries with maxBytes for two: %d", len(ents))
	}
	if ents, _ := l.Entries(2, 10, sz-1); len(ents) != 1 {
		t.Fatalf("Entries with maxBytes just under two: %d", len(ents))
	}
	for lo := uint64(1); lo <= m.lastIndex(); lo++ {
		for hi := lo + 1; hi <= m.lastIndex()+1; hi += 3 {
			ents, err := l.Entries(lo, hi, 1<<30)
			if err != nil || len(ents) != int(hi-lo) {
				t.Fatalf("Entries(%d,%d): %d %v", lo, hi, len(ents), err)
			}
			for i, e := range ents {
				w := m.ents[lo-1+uint64(i)]
				if e.Index != w.Index || e.BaseOffset != w.BaseOffset || !bytes.Equal(e.Data, w.Data) {
					t.Fatalf("Entries(%d,%d)[%d] = %s, want %s", lo, hi, i, summary(e), summary(w))
				}
			}
		}
	}
	m.check(t, l)
}

func TestTruncateSuffix(t *testing.T) {
	fs := NewMemFS()
	o := Options{FS: fs, Dir: "/d", SegmentBytes: 700, IndexIntervalBytes: 150}
	for _, flushFirst := range []bool{false, true} {
		for cut := uint64(1); cut <= 31; cut += 2 {
			fs.RemoveAll("/d")
			l := mustOpen(t, o)
			m := newModel()
			for i := 0; i < 30; i++ {
				if i%10 == 0 {
					m.append(t, l, m.internal(uint64(1+i/10), ""))
				}
				m.append(t, l, m.data(uint64(1+i/10), 1+i%3, int64(i*10), 40))
				if flushFirst && i == 20 {
					if err := l.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			segsBefore := len(l.segs)
			if err := l.TruncateSuffix(cut); err != nil {
				t.Fatalf("TruncateSuffix(%d): %v", cut, err)
			}
			m.truncate(cut)
			m.check(t, l)
			if l.FlushedIndex() != m.lastIndex() || l.FlushedOffset() != m.leo() || l.UnflushedBytes() != 0 {
				t.Fatalf("after truncation: flushed %d/%d, want %d/%d", l.FlushedIndex(), l.FlushedOffset(), m.lastIndex(), m.leo())
			}
			if len(l.segs) > segsBefore {
				t.Fatal("segments grew")
			}
			checkReadsEverywhere(t, l, m)
			// Diverge with a new term, then reopen.
			for i := 0; i < 8; i++ {
				m.append(t, l, m.data(9, 2, int64(5000+i), 60))
			}
			m.check(t, l)
			if f, e, ok := l.EpochEndOffset(8); ok != (cut > 1) || (ok && (e != m.ents[len(m.ents)-8].BaseOffset || f > 8)) {
				t.Fatalf("EpochEndOffset(8) = %d %d %v", f, e, ok)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			fs.Crash()
			l = mustOpen(t, o)
			m.check(t, l)
			checkReadsEverywhere(t, l, m)
			// The last timestamp survived truncation and reopen.
			if ts, _ := l.MaxTimestamp(); ts != 5007+1 {
				t.Fatalf("MaxTimestamp after truncate+reopen = %d", ts)
			}
			l.Close()
		}
	}
}

func TestTruncateRecomputesMaxTimestamp(t *testing.T) {
	l := mustOpen(t, Options{FS: NewMemFS(), Dir: "/d", IndexIntervalBytes: 100})
	defer l.Close()
	m := newModel()
	tss := []int64{50, 10, 90, 20, 30, 200, 40, 60}
	for _, ts := range tss {
		m.append(t, l, m.data(1, 1, ts, 80))
	}
	for cut := uint64(len(tss)); cut >= 2; cut-- {
		if err := l.TruncateSuffix(cut); err != nil {
			t.Fatal(err)
		}
		m.truncate(cut)
		var want, wantOff int64 = -1, -1
		for _, e := range m.ents {
			if e.MaxTimestamp > want {
				want, wantOff = e.MaxTimestamp, e.BaseOffset
			}
		}
		if ts, off := l.MaxTimestamp(); ts != want || off != wantOff {
			t.Fatalf("cut %d: MaxTimestamp %d@%d, want %d@%d", cut, ts, off, want, wantOff)
		}
		for _, q := range []int64{0, 15, 45, 55, 95, 300} {
			checkTimestamp(t, l, m, q)
		}
	}
}

func checkTimestamp(t *testing.T, l *Log, m *model, ts int64) {
	t.Helper()
	var wantOff, wantTs int64
	wantOK := false
	for _, e := range m.ents {
		if e.Type == EntryData && e.BaseOffset+int64(e.Records) > m.lso && e.MaxTimestamp >= ts {
			wantOff, wantTs, wantOK = max(e.BaseOffset, m.lso), e.MaxTimestamp, true
			break
		}
	}
	off, got, ok := l.OffsetForTimestamp(ts)
	if ok != wantOK || (ok && (off != wantOff || got != wantTs)) {
		t.Fatalf("OffsetForTimestamp(%d) = %d, %d, %v; want %d, %d, %v", ts, off, got, ok, wantOff, wantTs, wantOK)
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	l := mustOpen(t, Options{FS: NewMemFS(), Dir: "/d", SegmentBytes: 2000, IndexIntervalBytes: 150})
	defer l.Close()
	m := newModel()
	// Timestamps mostly increasing, with some out of order.
	for i := 0; i < 60; i++ {
		ts := int64(i * 100)
		if i%9 == 4 {
			ts -= 350
		}
		if i%13 == 0 {
			m.append(t, l, m.internal(1, ""))
		}
		m.append(t, l, m.data(1, 1+i%4, ts, 30))
	}
	for ts := int64(-100); ts < 6500; ts += 37 {
		checkTimestamp(t, l, m, ts)
	}
	// After moving the log start into the middle of a batch.
	var mid int64
	for _, e := range m.ents {
		if e.Records > 2 && e.BaseOffset > 50 {
			mid = e.BaseOffset + 1
			break
		}
	}
	if err := l.AdvanceLogStart(mid); err != nil {
		t.Fatal(err)
	}
	m.lso = mid
	for ts := int64(-100); ts < 6500; ts += 37 {
		checkTimestamp(t, l, m, ts)
	}
}

func TestEpochEndOffset(t *testing.T) {
	l := mustOpen(t, Options{FS: NewMemFS(), Dir: "/d", SegmentBytes: 500})
	defer l.Close()
	m := newModel()
	if _, _, ok := l.EpochEndOffset(5); ok {
		t.Fatal("empty log answered")
	}
	// term 2: offsets 0..5, term 3: leader entry only, term 5: 6..
	m.append(t, l, m.internal(2, ""))
	for i := 0; i < 3; i++ {
		m.append(t, l, m.data(2, 2, 1, 30))
	}
	m.append(t, l, m.internal(3, ""))
	m.append(t, l, m.internal(5, ""))
	for i := 0; i < 4; i++ {
		m.append(t, l, m.data(5, 1, 1, 30))
	}
	cases := []struct {
		epoch, found uint64
		end          int64
		ok           bool
	}{{0, 0, 0, false}, {1, 0, 0, false}, {2, 2, 6, true}, {3, 3, 6, true}, {4, 3, 6, true}, {5, 5, 10, true}, {9, 5, 10, true}}
	check := func() {
		for _, c := range cases {
			f, e, ok := l.EpochEndOffset(c.epoch)
			if ok != c.ok || (ok && (f != c.found || e != c.end)) {
				t.Fatalf("EpochEndOffset(%d) = %d %d %v, want %+v", c.epoch, f, e, ok, c)
			}
		}
	}
	check()
	l.Flush()
	l.Close()
	l = mustOpen(t, Options{FS: l.fs, Dir: "/d", SegmentBytes: 500})
	check()
	m.check(t, l)
}

func TestAdvanceLogStart(t *testing.T) {
	fs := NewMemFS()
	o := Options{FS: fs, Dir: "/d", SegmentBytes: 800, IndexIntervalBytes: 100}
	l := mustOpen(t, o)
	m := newModel()
	for i := 0; i < 40; i++ {
		m.append(t, l, m.data(uint64(1+i/15), 3, int64(i), 50))
	}
	nseg := len(l.segs)
	if nseg < 5 {
		t.Fatalf("%d segments", nseg)
	}
	// Mid-segment: nothing deleted.
	if err := l.AdvanceLogStart(1); err != nil {
		t.Fatal(err)
	}
	m.lso = 1
	if len(l.segs) != nseg || l.FirstIndex() != 1 {
		t.Fatal("a segment was deleted for a mid-segment log start")
	}
	if _, err := l.ReadBatches(0, 10, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	got, err := l.ReadBatches(1, 1, 100) // offset 1 is inside batch 0..2
	if err != nil || recordbatch.BaseOffset(got) != 0 {
		t.Fatalf("read at log start inside batch: %v", err)
	}
	m.check(t, l)
	// Smaller: no-op. Beyond the end: error.
	if err := l.AdvanceLogStart(0); err != nil || l.LogStartOffset() != 1 {
		t.Fatal("log start moved backwards")
	}
	if err := l.AdvanceLogStart(m.leo() + 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("beyond end: %v", err)
	}
	// Across segments: to the base of the third segment + 1.
	target := l.segs[2].baseOffset + 1
	wantFirst := l.segs[2].baseIndex
	wantPrevTerm := l.segs[2].prevTerm
	if err := l.AdvanceLogStart(target); err != nil {
		t.Fatal(err)
	}
	m.lso = target
	if l.FirstIndex() != wantFirst || len(l.segs) != nseg-2 {
		t.Fatalf("FirstIndex %d (want %d), %d segments", l.FirstIndex(), wantFirst, len(l.segs))
	}
	if term, err := l.Term(wantFirst - 1); err != nil || term != wantPrevTerm {
		t.Fatalf("Term(FirstIndex-1) = %d, %v", term, err)
	}
	if _, err := l.Term(wantFirst - 2); !errors.Is(err, ErrCompacted) {
		t.Fatalf("Term below: %v", err)
	}
	if _, err := l.Entries(wantFirst-1, wantFirst+1, 1<<20); !errors.Is(err, ErrCompacted) {
		t.Fatal(err)
	}
	m.check(t, l)
	for ts := int64(-1); ts < 45; ts += 3 {
		checkTimestamp(t, l, m, ts)
	}
	// Persisted across a reopen (with a crash: it must have been durable).
	l.Close()
	fs.Crash()
	l = mustOpen(t, o)
	m.check(t, l)
	if l.FirstIndex() != wantFirst {
		t.Fatalf("FirstIndex after reopen %d", l.FirstIndex())
	}
	// To the log end: every closed segment goes; the active one stays.
	if err := l.AdvanceLogStart(m.leo()); err != nil {
		t.Fatal(err)
	}
	m.lso = m.leo()
	if len(l.segs) != 1 {
		t.Fatalf("%d segments left", len(l.segs))
	}
	if got, err := l.ReadBatches(m.leo(), 100, 1<<40); got != nil || err != nil {
		t.Fatal(got, err)
	}
	m.append(t, l, m.data(3, 1, 99, 10))
	m.check(t, l)
	l.Close()
	l = mustOpen(t, o)
	m.check(t, l)
	names, _ := fs.ReadDir("/d")
	for _, n := range names {
		if strings.HasSuffix(n, ".tmp") {
			t.Fatalf("leftover %s", n)
		}
	}
	l.Close()
}

func TestRetentionBySize(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, Options{FS: fs, Dir: "/d", SegmentBytes: 1000})
	defer l.Close()
	m := newModel()
	for i := 0; i < 50; i++ {
		m.append(t, l, m.data(1, 2, int64(i), 100))
	}
	if start, err := l.EnforceRetention(-1, -1); err != nil || start != 0 {
		t.Fatalf("unlimited retention: %d %v", start, err)
	}
	total := l.SizeBytes()
	limit := total / 2
	start, err := l.EnforceRetention(-1, limit)
	if err != nil {
		t.Fatal(err)
	}
	if l.SizeBytes() < limit {
		t.Fatalf("size %d below retention.bytes %d", l.SizeBytes(), limit)
	}
	if l.SizeBytes()-l.segs[0].size >= limit {
		t.Fatalf("size %d: could have deleted another segment of %d", l.SizeBytes(), l.segs[0].size)
	}
	if start != l.segs[0].baseOffset || start == 0 || l.LogStartOffset() != start {
		t.Fatalf("log start %d, first segment %d", start, l.segs[0].baseOffset)
	}
	m.lso = start
	m.check(t, l)
	// Zero: everything but the active segment.
	if _, err := l.EnforceRetention(-1, 0); err != nil {
		t.Fatal(err)
	}
	if len(l.segs) != 1 {
		t.Fatalf("%d segments", len(l.segs))
	}
	m.lso = l.LogStartOffset()
	m.check(t, l)
	var sum int64
	names, _ := fs.ReadDir("/d")
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			fi, _ := fs.Stat(filepath.Join("/d", n))
			sum += fi.Size()
		}
	}
	if sum != l.SizeBytes() {
		t.Fatalf("SizeBytes %d, files %d", l.SizeBytes(), sum)
	}
}

func TestRetentionByTime(t *testing.T) {
	clk := newClock()
	fs := NewMemFS()
	o := withClock(Options{FS: fs, Dir: "/d", SegmentBytes: 600}, clk)
	l := mustOpen(t, o)
	defer l.Close()
	m := newModel()
	base := clk.ms()
	for i := 0; i < 30; i++ {
		// Record timestamps one minute apart, starting an hour ago.
		m.append(t, l, m.data(1, 1, base-3600_000+int64(i)*60_000, 100))
	}
	// Keep 15 minutes: records older than now-15min go, by whole segments.
	start, err := l.EnforceRetention(15*60_000, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range l.segs[:len(l.segs)-1] {
		_ = s
	}
	first := l.segs[0]
	if len(l.segs) > 1 && clk.ms()-first.maxTs > 15*60_000 {
		t.Fatalf("segment with max ts %d kept", first.maxTs)
	}
	m.lso = start
	m.check(t, l)
	// Everything older than the newest record, but never the active segment.
	clk.Advance(24 * time.Hour)
	if _, err := l.EnforceRetention(1, -1); err != nil {
		t.Fatal(err)
	}
	if len(l.segs) != 1 {
		t.Fatalf("%d segments", len(l.segs))
	}
	m.lso = l.LogStartOffset()
	m.check(t, l)
}

func TestSegmentRollByTime(t *testing.T) {
	clk := newClock()
	fs := NewMemFS()
	o := withClock(Options{FS: fs, Dir: "/d", SegmentMs: 1000}, clk)
	l := mustOpen(t, o)
	m := newModel()
	m.append(t, l, m.data(1, 1, 1, 10))
	clk.Advance(500 * time.Millisecond)
	m.append(t, l, m.data(1, 1, 1, 10))
	if len(l.segs) != 1 {
		t.Fatal("rolled too early")
	}
	clk.Advance(600 * time.Millisecond)
	m.append(t, l, m.data(1, 1, 1, 10))
	if len(l.segs) != 2 {
		t.Fatalf("%d segments; want a roll after SegmentMs", len(l.segs))
	}
	// SetOptions at run time.
	l.SetOptions(100, 0)
	m.append(t, l, m.data(1, 1, 1, 10))
	m.append(t, l, m.data(1, 1, 1, 10))
	if len(l.segs) != 4 {
		t.Fatalf("%d segments after SetOptions(100)", len(l.segs))
	}
	m.check(t, l)
	l.Close()
	l = mustOpen(t, o)
	m.check(t, l)
	l.Close()
}

func TestReopenTrustsClosedSegmentIndexes(t *testing.T) {
	mfs := NewMemFS()
	cfs := &countingFS{FS: mfs}
	o := Options{FS: cfs, Dir: "/d", SegmentBytes: 64 << 10, IndexIntervalBytes: 512}
	l := mustOpen(t, o)
	m := newModel()
	for i := 0; i < 400; i++ {
		if i%100 == 0 {
			m.append(t, l, m.internal(uint64(1+i/100), "leader"))
		}
		m.append(t, l, m.data(uint64(1+i/100), 1+i%3, int64(i), 500))
	}
	nseg := len(l.segs)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := mfs.ReadDir("/d")
	nidx := 0
	for _, n := range names {
		if strings.HasSuffix(n, ".index") {
			nidx++
		}
	}
	if nidx != nseg-1 {
		t.Fatalf("%d index files for %d closed segments", nidx, nseg-1)
	}
	before := cfs.read.Load()
	l = mustOpen(t, o)
	read := cfs.read.Load() - before
	lastSize := l.segs[len(l.segs)-1].size
	if read > lastSize+int64(nseg)*(16<<10) {
		t.Fatalf("Open read %d bytes; last segment is %d (closed segments should not be scanned)", read, lastSize)
	}
	m.check(t, l)
	checkReadsEverywhere(t, l, m)
	for ts := int64(0); ts < 400; ts += 17 {
		checkTimestamp(t, l, m, ts)
	}
	for e := uint64(0); e < 6; e++ {
		f1, o1, ok1 := l.EpochEndOffset(e)
		// Compare with a log rebuilt from scratch (all index files removed).
		_ = f1
		_ = o1
		_ = ok1
	}
	l.Close()
	// Remove the index files: Open rebuilds them and gets the same answers.
	want := map[uint64][3]int64{}
	l = mustOpen(t, o)
	for e := uint64(0); e < 6; e++ {
		f, off, ok := l.EpochEndOffset(e)
		b := int64(0)
		if ok {
			b = 1
		}
		want[e] = [3]int64{int64(f), off, b}
	}
	l.Close()
	for _, n := range names {
		if strings.HasSuffix(n, ".index") || strings.HasSuffix(n, ".timeindex") {
			mfs.Remove("/d/" + n)
		}
	}
	l = mustOpen(t, o)
	defer l.Close()
	m.check(t, l)
	for e := uint64(0); e < 6; e++ {
		f, off, ok := l.EpochEndOffset(e)
		b := int64(0)
		if ok {
			b = 1
		}
		if got := [3]int64{int64(f), off, b}; got != want[e] {
			t.Fatalf("EpochEndOffset(%d) = %v, with index files %v", e, got, want[e])
		}
	}
	for ts := int64(0); ts < 400; ts += 17 {
		checkTimestamp(t, l, m, ts)
	}
}

func TestScanBatches(t *testing.T) {
	l := mustOpen(t, Options{FS: NewMemFS(), Dir: "/d", SegmentBytes: 3000})
	defer l.Close()
	m := newModel()
	for i := 0; i < 100; i++ {
		if i%10 == 0 {
			m.append(t, l, m.internal(1, ""))
		}
		m.append(t, l, m.data(1, 1+i%4, 0, 40))
	}
	var start int64
	for _, e := range m.ents {
		if e.Type == EntryData && e.Records > 1 && e.BaseOffset > 40 {
			start = e.BaseOffset + 1
			break
		}
	}
	if err := l.AdvanceLogStart(start); err != nil {
		t.Fatal(err)
	}
	var got []int64
	err := l.ScanBatches(func(base int64, b []byte) error {
		if !kafkaCRCOK(b) || recordbatch.BaseOffset(b) != base {
			t.Fatalf("bad batch at %d", base)
		}
		got = append(got, base)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, e := range m.ents {
		if e.Type == EntryData && e.BaseOffset+int64(e.Records) > start {
			want = append(want, e.BaseOffset)
		}
	}
	if len(got) != len(want) || got[0] != want[0] || got[len(got)-1] != want[len(want)-1] {
		t.Fatalf("scanned %v, want %v", got, want)
	}
	stop := errors.New("stop")
	n := 0
	if err := l.ScanBatches(func(int64, []byte) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("error from fn: %v after %d", err, n)
	}
}

func TestReset(t *testing.T) {
	fs := NewMemFS()
	o := Options{FS: fs, Dir: "/d", SegmentBytes: 500}
	l := mustOpen(t, o)
	m := newModel()
	for i := 0; i < 20; i++ {
		m.append(t, l, m.data(1, 1, 1, 50))
	}
	if err := l.Reset(100, 7, 5000); err != nil {
		t.Fatal(err)
	}
	m = &model{firstIndex: 100, baseOffset: 5000, prevTerm: 7, lso: 5000}
	if l.FirstIndex() != 100 || l.LastIndex() != 99 || l.LastTerm() != 7 || l.LogEndOffset() != 5000 ||
		l.LogStartOffset() != 5000 || l.FlushedIndex() != 99 {
		t.Fatalf("after reset: first %d last %d term %d leo %d", l.FirstIndex(), l.LastIndex(), l.LastTerm(), l.LogEndOffset())
	}
	if term, err := l.Term(99); err != nil || term != 7 {
		t.Fatalf("Term(99) = %d %v", term, err)
	}
	m.append(t, l, m.data(8, 3, 1, 10))
	m.check(t, l)
	l.Flush()
	l.Close()
	fs.Crash()
	l = mustOpen(t, o)
	m.check(t, l)
	if l.FirstIndex() != 100 {
		t.Fatal("reset not durable")
	}
	l.Close()
}

func TestCloseAndDelete(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, Options{FS: fs, Dir: "/data/topic-0"})
	m := newModel()
	m.append(t, l, m.data(1, 1, 1, 1))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if err := l.Append([]Entry{m.data(1, 1, 1, 1)}); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if _, err := l.ReadBatches(0, 1, 1); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if err := l.Flush(); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	l = mustOpen(t, Options{FS: fs, Dir: "/data/topic-0"})
	m.check(t, l)
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	fs.Crash()
	if _, err := fs.Stat("/data/topic-0"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory survived Delete: %v", err)
	}
}

// TestConcurrentFlushAppendRead runs group commit: writers append under a mutex, one
// goroutine flushes in a loop, readers read; run with -race.
func TestConcurrentFlushAppendRead(t *testing.T) {
	l := mustOpen(t, Options{FS: NewMemFS(), Dir: "/d", SegmentBytes: 16 << 10, IndexIntervalBytes: 512})
	defer l.Close()
	const writers, per = 4, 150
	var appendMu sync.Mutex
	stop := make(chan struct{})
	var flusherWG, wg sync.WaitGroup
	flusherWG.Add(1)
	go func() {
		defer flusherWG.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := l.Flush(); err != nil {
				t.Error(err)
				return
			}
			if fi, li := l.FlushedIndex(), l.LastIndex(); fi > li {
				t.Errorf("FlushedIndex %d > LastIndex %d", fi, li)
				return
			}
		}
	}()
	var readers sync.WaitGroup
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				leo := l.LogEndOffset()
				if leo == 0 {
					continue
				}
				b, err := l.ReadBatches(leo/2, 4096, leo)
				if err != nil {
					t.Error(err)
					return
				}
				splitBatches(t, b)
				_, _ = l.Term(l.LastIndex())
				_ = l.SizeBytes() + l.UnflushedBytes()
			}
		}()
	}
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				appendMu.Lock()
				e := Entry{Index: l.LastIndex() + 1, Term: 1, Type: EntryData, Data: makeBatch(1+i%3, int64(i), 100, byte(w))}
				err := l.Append([]Entry{e})
				appendMu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	flusherWG.Wait()
	readers.Wait()
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if l.FlushedIndex() != writers*per || l.FlushedOffset() != l.LogEndOffset() {
		t.Fatalf("flushed %d/%d of %d/%d", l.FlushedIndex(), l.FlushedOffset(), writers*per, l.LogEndOffset())
	}
	b, err := l.ReadBatches(0, 1<<30, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(splitBatches(t, b)); n != writers*per {
		t.Fatalf("%d batches", n)
	}
}

// TestConcurrentStructuralOps runs truncation, retention and reads alongside appends.
func TestConcurrentStructuralOps(t *testing.T) {
	l := mustOpen(t, Options{FS: NewMemFS(), Dir: "/d", SegmentBytes: 4 << 10, IndexIntervalBytes: 256})
	defer l.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				lso, leo := l.LogStartOffset(), l.LogEndOffset()
				if leo > lso {
					b, err := l.ReadBatches(lso+(leo-lso)/3, 2048, leo)
					if err != nil && !errors.Is(err, ErrOffsetOutOfRange) {
						t.Error(err)
						return
					}
					splitBatches(t, b)
				}
				if fi, li := l.FirstIndex(), l.LastIndex(); li >= fi {
					if _, err := l.Entries(fi, li+1, 4096); err != nil && !errors.Is(err, ErrCompacted) && !errors.Is(err, ErrUnavailable) {
						t.Error(err)
						return
					}
				}
				l.OffsetForTimestamp(50)
				l.Flush()
			}
		}()
	}
	for i := 0; i < 400; i++ {
		e := Entry{Index: l.LastIndex() + 1, Term: uint64(1 + i/50), Type: EntryData, Data: makeBatch(2, int64(i), 100, 1)}
		if err := l.Append([]Entry{e}); err != nil {
			t.Fatal(err)
		}
		switch i % 50 {
		case 20:
			if err := l.TruncateSuffix(l.LastIndex() - 3); err != nil {
				t.Fatal(err)
			}
		case 40:
			if _, err := l.EnforceRetention(-1, 12<<10); err != nil {
				t.Fatal(err)
			}
		case 45:
			if err := l.AdvanceLogStart(l.LogEndOffset() - 20); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	got, err := l.ReadBatches(l.LogStartOffset(), 1<<30, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	bs := splitBatches(t, got)
	if len(bs) == 0 || recordbatch.BaseOffset(bs[len(bs)-1])+2 != l.LogEndOffset() {
		t.Fatal("final read does not reach the log end")
	}
}

func TestOpenRemovesStrayFiles(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, memOpts(fs, "/d"))
	l.Close()
	for _, n := range []string{"x.tmp", "00000000000000000777.index", "00000000000000000777.timeindex"} {
		f, _ := fs.OpenFile("/d/"+n, os.O_CREATE|os.O_RDWR, 0o644)
		f.Close()
	}
	l = mustOpen(t, memOpts(fs, "/d"))
	l.Close()
	names, _ := fs.ReadDir("/d")
	sort.Strings(names)
	if len(names) != 1 || names[0] != "00000000000000000001.log" {
		t.Fatalf("files after Open: %v", names)
	}
}

func TestOSFS(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	o := Options{Dir: dir, SegmentBytes: 2000}
	l := mustOpen(t, o)
	m := newModel()
	for i := 0; i < 30; i++ {
		m.append(t, l, m.data(1, 2, int64(i), 100))
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	m.check(t, l)
	if err := l.TruncateSuffix(20); err != nil {
		t.Fatal(err)
	}
	m.truncate(20)
	l.Close()
	l = mustOpen(t, o)
	m.check(t, l)
	checkReadsEverywhere(t, l, m)
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("dir not deleted")
	}
}
