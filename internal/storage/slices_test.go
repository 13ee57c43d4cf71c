package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

// materialize reads the slices' bytes back, as sendfile would send them.
func materialize(t tT, bs BatchSlices) []byte {
	t.Helper()
	var out []byte
	var total int64
	for _, s := range bs.Slices {
		b := make([]byte, s.Len)
		if _, err := s.File.ReadAt(b, s.Pos); err != nil {
			t.Fatalf("reading slice %+v: %v", s, err)
		}
		out = append(out, b...)
		total += s.Len
	}
	if total != bs.Bytes {
		t.Fatalf("slices hold %d bytes, Bytes says %d", total, bs.Bytes)
	}
	return out
}

// sameRead checks that ReadBatchSlices answers a read exactly as ReadBatches does. Only
// with mayFallBack may it decline the read (ErrNoFileSlices: some batch is not checked
// yet), leaving it to ReadBatches; it returns whether it did.
func sameRead(t tT, l *Log, off int64, maxBytes int, upTo int64, mayFallBack ...bool) (fellBack bool) {
	t.Helper()
	want, werr := l.ReadBatches(off, maxBytes, upTo)
	bs, gerr := l.ReadBatchSlices(off, maxBytes, upTo)
	defer bs.Release()
	if len(mayFallBack) > 0 && mayFallBack[0] && errors.Is(gerr, ErrNoFileSlices) {
		return true
	}
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("read(%d, %d, %d): ReadBatches err %v, ReadBatchSlices err %v", off, maxBytes, upTo, werr, gerr)
	}
	if got := materialize(t, bs); !bytes.Equal(got, want) {
		t.Fatalf("read(%d, %d, %d): slices hold %d bytes, ReadBatches %d", off, maxBytes, upTo, len(got), len(want))
	}
	return false
}

// Until the log is reopened, everything in it was written by this process (appends, and
// compaction's copies), so every read is answered with slices at once: no fallback.
// After a reopen, a read may fall back to ReadBatches, never answer differently.
func TestReadBatchSlicesMatchesReadBatches(t *testing.T) {
	dir := t.TempDir()
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		o := Options{FS: OSFS(), Dir: fmt.Sprintf("%s/%d", dir, run),
			SegmentBytes:       int64(rapid.IntRange(200, 40000).Draw(rt, "segmentBytes")),
			IndexIntervalBytes: rapid.IntRange(1, 3000).Draw(rt, "interval")}
		l := mustOpen(rt, o)
		defer func() { l.Close() }()
		term := uint64(1)
		reopened := false
		ops := rapid.IntRange(1, 80).Draw(rt, "ops")
		for range ops {
			switch rapid.IntRange(0, 10).Draw(rt, "op") {
			case 10:
				if err := l.Close(); err != nil {
					rt.Fatal(err)
				}
				l = mustOpen(rt, o)
				reopened = true
			case 0:
				n := rapid.IntRange(0, 60).Draw(rt, "internalSize")
				if err := l.Append([]Entry{{Index: l.LastIndex() + 1, Term: term, Type: EntryInternal, Data: bytes.Repeat([]byte{7}, n)}}); err != nil {
					rt.Fatal(err)
				}
			case 1:
				// Retention, or a DeleteRecords-like advance of the log start.
				if rapid.Bool().Draw(rt, "bySize") {
					if _, err := l.EnforceRetention(-1, int64(rapid.IntRange(0, 60000).Draw(rt, "retentionBytes"))); err != nil {
						rt.Fatal(err)
					}
				} else if leo := l.LogEndOffset(); leo > l.LogStartOffset() {
					if err := l.AdvanceLogStart(rapid.Int64Range(l.LogStartOffset(), leo).Draw(rt, "logStart")); err != nil {
						rt.Fatal(err)
					}
				}
			case 2:
				if l.LastIndex() >= l.FirstIndex() {
					if err := l.TruncateSuffix(rapid.Uint64Range(l.FirstIndex()+1, l.LastIndex()+1).Draw(rt, "truncateFrom")); err != nil {
						rt.Fatal(err)
					}
					term++
				}
			case 3:
				if err := l.Flush(); err != nil {
					rt.Fatal(err)
				}
				if _, err := l.Compact(CompactOptions{UpTo: l.LogEndOffset()}); err != nil {
					rt.Fatal(err)
				}
			default:
				var data []byte
				if rapid.Bool().Draw(rt, "keyed") {
					var recs []kv
					for i := range rapid.IntRange(1, 4).Draw(rt, "records") {
						recs = append(recs, rec(fmt.Sprint("k", i%3), strings.Repeat("v", rapid.IntRange(0, 300).Draw(rt, "value"))))
					}
					data = kvBatch(1000, kafkatest.Codecs[0], false, recs...)
				} else {
					// Sizes around the scanner's small-entry and window thresholds.
					size := rapid.SampledFrom([]int{0, 10, 900, 1000, 2000, hdrWindow - 100, hdrWindow + 100}).Draw(rt, "valueSize")
					data = makeBatch(rapid.IntRange(1, 3).Draw(rt, "n"), 1000, size, byte(l.LastIndex()))
				}
				if err := l.Append([]Entry{{Index: l.LastIndex() + 1, Term: term, Type: EntryData, Data: data}}); err != nil {
					rt.Fatal(err)
				}
			}
		}
		lso, leo := l.LogStartOffset(), l.LogEndOffset()
		for range 20 {
			off := rapid.Int64Range(lso-1, leo+1).Draw(rt, "offset")
			maxBytes := rapid.SampledFrom([]int{-1, 0, 1, 500, 3000, 20000, 1 << 30}).Draw(rt, "maxBytes")
			upTo := rapid.SampledFrom([]int64{off, off + 1, off + 5, leo, leo + 10}).Draw(rt, "upTo")
			sameRead(rt, l, off, maxBytes, upTo, reopened)
		}
		for off := lso; off < leo; off++ {
			sameRead(rt, l, off, 1<<30, leo, reopened)
		}
	})
}

// Slices taken before retention deletes their segments, compaction replaces them and the
// log closes still read the bytes they had.
func TestBatchSlicesOutliveTheirSegments(t *testing.T) {
	c := newCtLog(t, 600)
	c.l.Close()
	c.o.FS, c.o.Dir = OSFS(), t.TempDir()
	c.l = mustOpen(t, c.o)
	for i := 0; i < 60; i++ {
		c.append(kafkatest.Codecs[0], rec(fmt.Sprint("k", i%3), fmt.Sprint("value-", i)))
		if i%5 == 0 {
			c.internal()
		}
	}
	c.flush()
	want, err := c.l.ReadBatches(0, 1<<30, c.l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	bs, err := c.l.ReadBatchSlices(0, 1<<30, c.l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Release()
	if len(bs.files) < 3 {
		t.Fatalf("read spans %d segment files; want several", len(bs.files))
	}
	if st, err := c.l.Compact(CompactOptions{UpTo: c.l.LogEndOffset()}); err != nil || st.SegmentsRewritten == 0 {
		t.Fatalf("compaction: %+v %v", st, err)
	}
	if _, err := c.l.EnforceRetention(-1, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.l.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.o.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("log directory still there: %v", err)
	}
	if got := materialize(t, bs); !bytes.Equal(got, want) {
		t.Fatalf("slices read %d bytes, ReadBatches had %d", len(got), len(want))
	}
	bs.Release()
	bs.Release()
}

func TestReadBatchSlicesNeedsOSFiles(t *testing.T) {
	l := mustOpen(t, Options{FS: NewMemFS(), Dir: "/d"})
	defer l.Close()
	m := newModel()
	m.append(t, l, m.data(1, 2, 0, 10))
	if _, err := l.ReadBatchSlices(0, 1<<20, m.leo()); !errors.Is(err, ErrNoFileSlices) {
		t.Fatalf("MemFS read: %v, want ErrNoFileSlices", err)
	}
}

// sysCountingFS counts the bytes read through File.ReadAt on the real filesystem.
type sysCountingFS struct {
	FS
	read atomic.Int64
}

type sysCountingFile struct {
	File
	fs *sysCountingFS
}

func (c *sysCountingFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &sysCountingFile{File: f, fs: c}, nil
}

func (f *sysCountingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.fs.read.Add(int64(n))
	return n, err
}

func (f *sysCountingFile) dupSysFile() (*os.File, error) { return f.File.(sysFiler).dupSysFile() }

// Finding the batches of large entries reads their headers, not their payloads.
func TestReadBatchSlicesReadsHeadersOnly(t *testing.T) {
	fs := &sysCountingFS{FS: OSFS()}
	l := mustOpen(t, Options{FS: fs, Dir: t.TempDir(), SegmentBytes: 1 << 20})
	defer l.Close()
	m := newModel()
	for i := 0; i < 40; i++ {
		m.append(t, l, m.data(1, 1, int64(i), 64<<10))
		m.append(t, l, m.internal(1, "x"))
	}
	fs.read.Store(0)
	bs, err := l.ReadBatchSlices(0, 1<<30, m.leo())
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Release()
	if len(bs.Slices) != 40 || bs.Bytes < 40*64<<10 {
		t.Fatalf("%d slices of %d bytes", len(bs.Slices), bs.Bytes)
	}
	// Each segment's scan starts with one window; after that only headers are read.
	if n, limit := fs.read.Load(), int64(80*hdrPeekSize+len(l.segs)*hdrWindow); n > limit {
		t.Fatalf("read %d bytes to find 80 entries in %d segments; want at most %d", n, len(l.segs), limit)
	}
}

// Structural damage stops ReadBatchSlices where it stops ReadBatches. Damage inside a
// payload made after this process checked the entry (here: Open's recovery scan of the
// last segment) is outside what the slices path sees, as documented; once ReadBatches
// finds it, slices stop serving the entry.
func TestReadBatchSlicesStructuralDamage(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, Options{FS: OSFS(), Dir: dir})
	m := newModel()
	for i := 0; i < 10; i++ {
		m.append(t, l, m.data(1, 2, int64(i), 100))
	}
	l.Flush()
	pos := l.segs[0].size
	name := segPath(dir, l.segs[0].baseIndex, logSuffix)
	l.Close()
	for _, damage := range []struct {
		name string
		at   func(entry int64) int64 // file position to flip, given the damaged entry's start
	}{
		{"length", func(e int64) int64 { return e + 3 }},
		{"index", func(e int64) int64 { return e + 15 }},
		{"type", func(e int64) int64 { return e + 24 }},
		{"base offset", func(e int64) int64 { return e + entryHeaderSize + 7 }},
		{"magic", func(e int64) int64 { return e + entryHeaderSize + recordbatch.MagicPos }},
		{"payload", func(e int64) int64 { return e + entryHeaderSize + recordbatch.HeaderSize + 3 }},
	} {
		t.Run(damage.name, func(t *testing.T) {
			f, err := os.OpenFile(name, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			entrySize := (pos - segHeaderSize) / 10
			at := damage.at(segHeaderSize + 6*entrySize) // the 7th entry: offsets 12 and 13
			var b [1]byte
			if _, err := f.ReadAt(b[:], at); err != nil && err != io.EOF {
				t.Fatal(err)
			}
			flip := func() {
				b[0] ^= 0x41
				if _, err := f.WriteAt(b[:], at); err != nil {
					t.Fatal(err)
				}
			}
			flip()
			defer flip()
			// Reopening would find the damage (recovery checks the tail): read through a log
			// opened before it instead.
			flip()
			l := mustOpen(t, Options{FS: OSFS(), Dir: dir})
			defer l.Close()
			flip()
			if damage.name == "payload" {
				bs, err := l.ReadBatchSlices(12, 1<<20, m.leo())
				if err != nil || bs.Bytes == 0 {
					t.Fatalf("payload damage: %+v %v", bs, err)
				}
				bs.Release()
				if _, err := l.ReadBatches(12, 1<<20, m.leo()); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("ReadBatches at the damaged entry: %v", err)
				}
				if bs, err := l.ReadBatchSlices(12, 1<<20, m.leo()); !errors.Is(err, ErrNoFileSlices) {
					t.Fatalf("ReadBatchSlices at an entry ReadBatches found damaged: %+v %v", bs, err)
				}
				sameRead(t, l, 0, 1<<20, 12) // the batches before it are still slices
				return
			}
			for _, off := range []int64{0, 10, 12, 13, 14} {
				sameRead(t, l, off, 1<<20, m.leo())
			}
			if _, err := l.ReadBatchSlices(12, 1<<20, m.leo()); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("ReadBatchSlices at the damaged entry: %v", err)
			}
		})
	}
}

// checkedLog writes a log of several closed segments (and an active one) through this
// process, flushes it so the closed segments get their index files, and closes it.
func checkedLog(t *testing.T, dir string) (o Options, m *model) {
	t.Helper()
	o = Options{FS: OSFS(), Dir: dir, SegmentBytes: 4000, IndexIntervalBytes: 300}
	l := mustOpen(t, o)
	m = newModel()
	for i := 0; i < 40; i++ {
		m.append(t, l, m.data(1, 2, int64(i), 200))
		if i%7 == 0 {
			m.append(t, l, m.internal(1, "x"))
		}
	}
	if len(l.segs) < 4 {
		t.Fatalf("%d segments; want several closed ones", len(l.segs))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return o, m
}

// slicesOrFallBack reads with ReadBatchSlices and reports whether it declined the read.
func slicesOrFallBack(t *testing.T, l *Log, off int64, maxBytes int, upTo int64) bool {
	t.Helper()
	bs, err := l.ReadBatchSlices(off, maxBytes, upTo)
	defer bs.Release()
	if errors.Is(err, ErrNoFileSlices) {
		return true
	}
	if err != nil {
		t.Fatalf("ReadBatchSlices(%d): %v", off, err)
	}
	want, err := l.ReadBatches(off, maxBytes, upTo)
	if err != nil || !bytes.Equal(materialize(t, bs), want) {
		t.Fatalf("ReadBatchSlices(%d) differs from ReadBatches (%v)", off, err)
	}
	return false
}

// After Open, closed segments trusted from their index files were not checked by this
// process: the first slices read over them falls back to ReadBatches, which checks them,
// and the next one gets slices. The last segment, rescanned by Open, and closed segments
// rescanned because their index was missing, are served as slices at once.
func TestReadBatchSlicesAfterReopen(t *testing.T) {
	dir := t.TempDir()
	o, m := checkedLog(t, dir)
	l := mustOpen(t, o)
	segs := len(l.segs)
	ends := make([]int64, segs)
	for i, s := range l.segs {
		ends[i] = s.endOffset
	}
	last := l.segs[segs-1].baseOffset
	if !slicesOrFallBack(t, l, 0, 1<<30, m.leo()) {
		t.Fatal("the first slices read over trusted closed segments did not fall back")
	}
	if slicesOrFallBack(t, l, last, 1<<30, m.leo()) {
		t.Fatal("the last segment, checked by Open's rescan, fell back")
	}
	// A copy read from the middle of a trusted segment checks only what it reads, which
	// does not continue the checked part: the hole before it stays unchecked.
	mid := (l.segs[1].baseOffset + ends[1]) / 2
	if l.segs[1].lookupOffset(mid).pos == segHeaderSize {
		t.Fatal("test needs an index point inside the segment")
	}
	if _, err := l.ReadBatches(mid, 1<<30, ends[1]); err != nil {
		t.Fatal(err)
	}
	if !slicesOrFallBack(t, l, l.segs[1].baseOffset, 1<<30, ends[1]) {
		t.Fatal("slices served a segment's unchecked start")
	}
	// A copy read of everything checks every segment from its start.
	if _, err := l.ReadBatches(0, 1<<30, m.leo()); err != nil {
		t.Fatal(err)
	}
	if slicesOrFallBack(t, l, 0, 1<<30, m.leo()) {
		t.Fatal("slices fell back after ReadBatches checked the whole log")
	}
	for off := int64(0); off < m.leo(); off++ {
		if slicesOrFallBack(t, l, off, 1000, m.leo()) {
			t.Fatalf("slices read at %d fell back after the whole log was checked", off)
		}
	}
	l.Close()

	// Without its index files a closed segment is rescanned by Open, entry by entry.
	if err := os.Remove(segPath(dir, 1, indexSuffix)); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, o)
	defer l.Close()
	if slicesOrFallBack(t, l, 0, 1<<30, ends[0]) {
		t.Fatal("a closed segment rescanned by Open fell back")
	}
	if !slicesOrFallBack(t, l, ends[0], 1<<30, ends[1]) {
		t.Fatal("a closed segment trusted from its index was served as slices at once")
	}
}

// A payload byte flipped on disk in a closed segment that Open trusts from its index is
// never served: ReadBatches reports it, and ReadBatchSlices never returns a slice holding
// it, before or after ReadBatches read the segment.
func TestReadBatchSlicesNeverServeUncheckedDamage(t *testing.T) {
	for _, when := range []string{"before reopening", "after reopening"} {
		t.Run(when, func(t *testing.T) {
			dir := t.TempDir()
			o, m := checkedLog(t, dir)
			l := mustOpen(t, o)
			seg := l.segs[1]
			name := segPath(dir, seg.baseIndex, logSuffix)
			// Damage the third data entry of the second segment.
			h := headerScanner{f: seg.f, pos: segHeaderSize, end: seg.size, index: seg.baseIndex, offset: seg.baseOffset, buf: make([]byte, hdrWindow)}
			var entry, entryEnd, damagedOff int64
			for n := 0; ; {
				at := h.pos
				e, st, err := h.next()
				if err != nil || st != readOK {
					t.Fatalf("scanning: %d %v", st, err)
				}
				if e.typ == EntryData {
					if n++; n == 3 {
						entry, entryEnd, damagedOff = at, h.pos, e.base
						break
					}
				}
			}
			at := entry + entryHeaderSize + recordbatch.HeaderSize + 5
			flip := func() {
				f, err := os.OpenFile(name, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				var b [1]byte
				if _, err := f.ReadAt(b[:], at); err != nil {
					t.Fatal(err)
				}
				b[0] ^= 0x10
				if _, err := f.WriteAt(b[:], at); err != nil {
					t.Fatal(err)
				}
			}
			if when == "before reopening" {
				l.Close()
				flip()
				l = mustOpen(t, o)
				if l.segs[1].checkedTo.Load() != segHeaderSize {
					t.Fatal("the damaged segment was rescanned, not trusted from its index")
				}
			} else {
				flip()
			}
			defer l.Close()
			noSliceHoldsDamage := func() {
				t.Helper()
				for off := int64(0); off < m.leo(); off++ {
					for _, maxBytes := range []int{1, 1000, 1 << 30} {
						bs, err := l.ReadBatchSlices(off, maxBytes, m.leo())
						for _, s := range bs.Slices {
							if s.File.Name() == name && s.Pos < entryEnd && s.Pos+s.Len > entry {
								t.Fatalf("ReadBatchSlices(%d, %d) served the damaged entry: %+v", off, maxBytes, s)
							}
						}
						bs.Release()
						if err != nil && !errors.Is(err, ErrNoFileSlices) && !errors.Is(err, ErrCorrupt) {
							t.Fatal(err)
						}
					}
				}
			}
			noSliceHoldsDamage()
			b, err := l.ReadBatches(0, 1<<30, m.leo())
			if err != nil || len(b) == 0 {
				t.Fatalf("ReadBatches before the damage: %d bytes, %v", len(b), err)
			}
			if _, err := l.ReadBatches(damagedOff, 1<<30, m.leo()); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("ReadBatches at the damaged entry: %v", err)
			}
			noSliceHoldsDamage()
			// What ReadBatches checked before the damage is served as slices now.
			if slicesOrFallBack(t, l, 0, 1<<30, damagedOff) {
				t.Fatal("the checked batches before the damage fell back")
			}
		})
	}
}

// Batches this process appends are served as slices at once, without a copy read first:
// across a roll, after a truncation and the appends that follow it.
func TestReadBatchSlicesServeAppendsAtOnce(t *testing.T) {
	l := mustOpen(t, Options{FS: OSFS(), Dir: t.TempDir(), SegmentBytes: 3000})
	defer l.Close()
	m := newModel()
	check := func() {
		t.Helper()
		for off := int64(0); off < m.leo(); off++ {
			bs, err := l.ReadBatchSlices(off, 1<<30, m.leo())
			if err != nil || bs.Bytes == 0 {
				t.Fatalf("ReadBatchSlices(%d) of appended batches: %+v %v", off, bs, err)
			}
			bs.Release()
		}
	}
	for i := 0; i < 20; i++ {
		m.append(t, l, m.data(1, 2, int64(i), 300))
		check()
	}
	if len(l.segs) < 2 {
		t.Fatal("test needs a roll")
	}
	if err := l.TruncateSuffix(l.LastIndex() - 2); err != nil {
		t.Fatal(err)
	}
	m.ents = m.ents[:len(m.ents)-3]
	for i := 0; i < 5; i++ {
		m.append(t, l, m.data(2, 1, int64(i), 300))
		check()
	}
}
