package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// afterCrash reopens the log after a power loss and checks it against the model: the
// flushed prefix must survive, the log must be a prefix of what was written, and every
// batch served must be intact. It trims the model to what survived.
func (m *model) afterCrash(t tT, o Options, flushedIndex uint64) *Log {
	t.Helper()
	l, err := Open(o)
	if err != nil {
		t.Fatalf("Open after crash: %v", err)
	}
	last := l.LastIndex()
	if last < flushedIndex {
		t.Fatalf("lost flushed data: LastIndex %d < flushed %d", last, flushedIndex)
	}
	if last > m.lastIndex() {
		t.Fatalf("LastIndex %d beyond anything written (%d)", last, m.lastIndex())
	}
	if l.FlushedIndex() != last || l.FlushedOffset() != l.LogEndOffset() {
		t.Fatalf("after Open: flushed %d/%d, last %d/%d", l.FlushedIndex(), l.FlushedOffset(), last, l.LogEndOffset())
	}
	m.truncate(last + 1)
	m.check(t, l)
	return l
}

func TestPowerLossKeepsExactlyTheFlushedPrefix(t *testing.T) {
	for _, segBytes := range []int64{1 << 30, 900} {
		fs := NewMemFS()
		o := Options{FS: fs, Dir: "/var/cairn/t-0", SegmentBytes: segBytes, IndexIntervalBytes: 200}
		l := mustOpen(t, o)
		m := newModel()
		for i := 0; i < 20; i++ {
			m.append(t, l, m.data(1, 1+i%3, int64(i), 60))
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		flushed := l.FlushedIndex()
		for i := 0; i < 15; i++ {
			m.append(t, l, m.data(2, 2, int64(100+i), 60))
		}
		fs.Crash() // unflushed data is gone entirely
		l = m.afterCrash(t, o, flushed)
		if l.LastIndex() != flushed {
			t.Fatalf("LastIndex %d, want exactly the flushed %d", l.LastIndex(), flushed)
		}
		// The log carries on from there.
		for i := 0; i < 5; i++ {
			m.append(t, l, m.data(3, 1, int64(200+i), 10))
		}
		l.Flush()
		fs.Crash()
		l = m.afterCrash(t, o, m.lastIndex())
		l.Close()
	}
}

func TestPowerLossTornTails(t *testing.T) {
	for seed := uint64(0); seed < 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		fs := NewMemFS()
		o := Options{FS: fs, Dir: "/d", SegmentBytes: int64(500 + rng.IntN(3000)), IndexIntervalBytes: 100 + rng.IntN(500)}
		l := mustOpen(t, o)
		m := newModel()
		var flushed uint64
		for round := 0; round < 3; round++ {
			n := 5 + rng.IntN(30)
			for i := 0; i < n; i++ {
				if rng.IntN(8) == 0 {
					m.append(t, l, m.internal(uint64(1+round), "cfg"))
				} else {
					m.append(t, l, m.data(uint64(1+round), 1+rng.IntN(4), int64(rng.IntN(1000)), rng.IntN(300)))
				}
				if rng.IntN(10) == 0 {
					if err := l.Flush(); err != nil {
						t.Fatal(err)
					}
					flushed = l.FlushedIndex()
				}
			}
			fs.CrashWithTornWrites(rng)
			l = m.afterCrash(t, o, flushed)
			flushed = l.LastIndex()
		}
		l.Close()
	}
}

// TestPowerLossNeverServesCorruptBytes damages unsynced bytes deliberately: whatever Open
// keeps must pass the CRC checks.
func TestPowerLossGarbageTail(t *testing.T) {
	fs := NewMemFS()
	o := Options{FS: fs, Dir: "/d"}
	l := mustOpen(t, o)
	m := newModel()
	for i := 0; i < 10; i++ {
		m.append(t, l, m.data(1, 1, int64(i), 100))
	}
	l.Flush()
	l.Close()
	good, _ := fs.Stat("/d/00000000000000000001.log")
	// A garbage tail that starts like a plausible entry header.
	f, _ := fs.OpenFile("/d/00000000000000000001.log", os.O_RDWR, 0)
	tail := make([]byte, 300)
	be.PutUint32(tail, 200)
	for i := 4; i < len(tail); i++ {
		tail[i] = byte(i)
	}
	f.WriteAt(tail, good.Size())
	f.Sync()
	f.Close()
	l = m.afterCrash(t, o, 10)
	if l.LastIndex() != 10 {
		t.Fatalf("LastIndex %d", l.LastIndex())
	}
	st, _ := fs.Stat("/d/00000000000000000001.log")
	if st.Size() != good.Size() {
		t.Fatalf("file not truncated to the last good entry: %d vs %d", st.Size(), good.Size())
	}
	l.Close()
}

// TestRapidLogModel drives the log with random operations, crashes and reopens, and
// compares it with a model after each step.
func TestRapidLogModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		fs := NewMemFS()
		clk := newClock()
		o := Options{
			FS:                 fs,
			Dir:                "/d",
			SegmentBytes:       int64(rapid.IntRange(300, 4000).Draw(rt, "segmentBytes")),
			IndexIntervalBytes: rapid.IntRange(1, 600).Draw(rt, "interval"),
			Now:                clk.Now,
		}
		l := mustOpen(rt, o)
		defer func() { l.Close() }()
		m := newModel()
		term := uint64(1)
		var flushed uint64
		seed := rapid.Uint64().Draw(rt, "seed")
		rng := rand.New(rand.NewPCG(seed, 1))
		rt.Repeat(map[string]func(*rapid.T){
			"append": func(rt *rapid.T) {
				n := rapid.IntRange(1, 4).Draw(rt, "n")
				var ents []Entry
				for i := 0; i < n; i++ {
					idx := m.lastIndex() + 1 + uint64(i)
					if rapid.IntRange(0, 6).Draw(rt, "kind") == 0 {
						ents = append(ents, Entry{Index: idx, Term: term, Type: EntryInternal, Data: []byte("x")})
					} else {
						recs := rapid.IntRange(1, 5).Draw(rt, "recs")
						ents = append(ents, Entry{Index: idx, Term: term, Type: EntryData,
							Data: makeBatch(recs, clk.ms()-int64(rapid.IntRange(0, 100000).Draw(rt, "age")), rapid.IntRange(0, 200).Draw(rt, "size"), byte(idx))})
					}
				}
				m.append(rt, l, ents...)
			},
			"newTerm": func(rt *rapid.T) { term += uint64(rapid.IntRange(1, 2).Draw(rt, "dt")) },
			"flush": func(rt *rapid.T) {
				if err := l.Flush(); err != nil {
					rt.Fatal(err)
				}
				flushed = l.FlushedIndex()
				if flushed != m.lastIndex() {
					rt.Fatalf("FlushedIndex %d after Flush, last %d", flushed, m.lastIndex())
				}
			},
			"truncate": func(rt *rapid.T) {
				fi := l.FirstIndex()
				if m.lastIndex() < fi {
					rt.Skip("empty")
				}
				from := rapid.Uint64Range(fi, m.lastIndex()+1).Draw(rt, "from")
				if err := l.TruncateSuffix(from); err != nil {
					rt.Fatal(err)
				}
				if from > m.lastIndex() {
					return // a no-op
				}
				m.truncate(from)
				flushed = m.lastIndex()
				if l.FlushedIndex() != flushed {
					rt.Fatalf("FlushedIndex %d after truncation to %d", l.FlushedIndex(), flushed)
				}
			},
			"advanceLogStart": func(rt *rapid.T) {
				off := rapid.Int64Range(0, m.leo()).Draw(rt, "off")
				if err := l.AdvanceLogStart(off); err != nil {
					rt.Fatal(err)
				}
				if off > m.lso {
					m.lso = off
					flushed = m.lastIndex()
				}
			},
			"retention": func(rt *rapid.T) {
				clk.Advance(10_000)
				ms := int64(rapid.IntRange(-1, 200000).Draw(rt, "ms"))
				b := int64(rapid.IntRange(-1, 20000).Draw(rt, "bytes"))
				start, err := l.EnforceRetention(ms, b)
				if err != nil {
					rt.Fatal(err)
				}
				if start < m.lso {
					rt.Fatalf("log start went back: %d < %d", start, m.lso)
				}
				if start != m.lso {
					flushed = m.lastIndex()
				}
				m.lso = start
			},
			"crash": func(rt *rapid.T) {
				if rapid.Bool().Draw(rt, "torn") {
					fs.CrashWithTornWrites(rng)
				} else {
					fs.Crash()
				}
				l = m.afterCrash(rt, o, flushed)
				flushed = m.lastIndex()
			},
			"reset": func(rt *rapid.T) {
				next := m.lastIndex() + uint64(rapid.IntRange(0, 5).Draw(rt, "skipIdx"))
				if next < 1 {
					next = 1
				}
				off := m.leo() + int64(rapid.IntRange(0, 5).Draw(rt, "skipOff"))
				if err := l.Reset(next, term, off); err != nil {
					rt.Fatal(err)
				}
				m = &model{firstIndex: next, baseOffset: off, prevTerm: term, lso: off}
				flushed = next - 1
			},
			"reopen": func(rt *rapid.T) {
				if err := l.Close(); err != nil {
					rt.Fatal(err)
				}
				l = mustOpen(rt, o)
				flushed = m.lastIndex()
			},
			"read": func(rt *rapid.T) {
				if m.leo() <= m.lso {
					rt.Skip("nothing to read")
				}
				off := rapid.Int64Range(m.lso, m.leo()-1).Draw(rt, "off")
				maxBytes := rapid.IntRange(0, 3000).Draw(rt, "max")
				upTo := rapid.Int64Range(off, m.leo()+2).Draw(rt, "upTo")
				got, err := l.ReadBatches(off, maxBytes, upTo)
				if err != nil {
					rt.Fatal(err)
				}
				if want := m.expectRead(off, maxBytes, upTo); !bytes.Equal(got, want) {
					rt.Fatalf("ReadBatches(%d, %d, %d): %d bytes, want %d", off, maxBytes, upTo, len(got), len(want))
				}
			},
			"timestamp": func(rt *rapid.T) {
				ts := clk.ms() - int64(rapid.IntRange(-10, 100000).Draw(rt, "ago"))
				var wantOff int64
				wantOK := false
				for _, e := range m.ents {
					if e.Index >= l.FirstIndex() && e.Type == EntryData && e.BaseOffset+int64(e.Records) > m.lso && e.MaxTimestamp >= ts {
						wantOff, wantOK = max(e.BaseOffset, m.lso), true
						break
					}
				}
				off, _, ok := l.OffsetForTimestamp(ts)
				if ok != wantOK || (ok && off != wantOff) {
					rt.Fatalf("OffsetForTimestamp(%d) = %d %v, want %d %v", ts, off, ok, wantOff, wantOK)
				}
			},
			"epoch": func(rt *rapid.T) {
				e := rapid.Uint64Range(0, term+1).Draw(rt, "epoch")
				fi := l.FirstIndex()
				var found uint64
				var end int64
				ok := false
				for i, x := range m.ents {
					if x.Index < fi || x.Term > e {
						continue
					}
					found, ok = x.Term, true
					end = m.leo()
					for _, y := range m.ents[i+1:] {
						if y.Term > x.Term {
							end = y.BaseOffset
							break
						}
					}
				}
				f, gotEnd, gotOK := l.EpochEndOffset(e)
				if gotOK != ok || (ok && (f != found || gotEnd != end)) {
					rt.Fatalf("EpochEndOffset(%d) = %d %d %v, want %d %d %v", e, f, gotEnd, gotOK, found, end, ok)
				}
			},
			"": func(rt *rapid.T) { m.check(rt, l) },
		})
	})
}

// ---- fuzzing recovery ----

// buildFuzzLog writes a deterministic log of several segments and closes it.
func buildFuzzLog(tb tT) (*MemFS, Options, *model) {
	fs := NewMemFS()
	o := Options{FS: fs, Dir: "/d", SegmentBytes: 1200, IndexIntervalBytes: 150}
	l := mustOpen(tb, o)
	m := newModel()
	for i := 0; i < 30; i++ {
		if i%11 == 5 {
			m.append(tb, l, m.internal(uint64(1+i/12), "leader"))
		}
		m.append(tb, l, m.data(uint64(1+i/12), 1+i%4, int64(1000+i*10), 20+i%5*30))
	}
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
	return fs, o, m
}

// FuzzRecovery damages a segment (or index) file of a valid log and checks that Open
// survives and serves only a prefix of what was written, intact.
func FuzzRecovery(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint32(0), []byte{1, 2, 3})                  // garbage appended to the first segment
	f.Add(uint8(255), uint8(0), uint32(0), []byte{0, 0, 0, 40, 9, 9, 9})   // plausible header appended to the last
	f.Add(uint8(255), uint8(1), uint32(100), []byte{0x80})                 // bit flip in the last segment
	f.Add(uint8(1), uint8(1), uint32(300), []byte{0x01, 0, 0, 0x10})       // bit flips in a closed segment
	f.Add(uint8(255), uint8(2), uint32(70), []byte{})                      // truncate the last segment mid-entry
	f.Add(uint8(0), uint8(2), uint32(500), []byte{})                       // truncate a closed segment
	f.Add(uint8(2), uint8(3), uint32(64), []byte{0, 0, 0, 0, 0, 0, 0, 0})  // zeros over an entry header
	f.Add(uint8(1), uint8(4), uint32(20), []byte{0xff})                    // damage an index file
	f.Add(uint8(0), uint8(1), uint32(10), []byte{0x40})                    // damage the first segment header
	f.Add(uint8(1), uint8(5), uint32(0), []byte{})                         // remove a closed segment
	f.Add(uint8(255), uint8(3), uint32(200), bytes.Repeat([]byte{7}, 500)) // overwrite past the end
	f.Fuzz(func(t *testing.T, which, op uint8, pos uint32, data []byte) {
		fs, o, m := buildFuzzLog(t)
		names, _ := fs.ReadDir("/d")
		var segs []string
		for _, n := range names {
			if strings.HasSuffix(n, ".log") {
				segs = append(segs, n)
			}
		}
		name := "/d/" + segs[int(which)%len(segs)]
		if op%6 == 4 {
			name = strings.TrimSuffix(name, ".log") + ".index"
			if which%2 == 1 {
				name = strings.TrimSuffix(name, ".index") + ".timeindex"
			}
		}
		if op%6 == 5 {
			// Remove a segment other than the first (a missing first segment is what
			// retention leaves, not damage).
			fs.Remove("/d/" + segs[1+int(which)%(len(segs)-1)])
		} else if fh, err := fs.OpenFile(name, os.O_RDWR, 0); err == nil {
			size, _ := fh.Size()
			p := int64(pos)
			if size > 0 {
				p %= size + 1
			}
			switch op % 6 {
			case 0: // append
				fh.WriteAt(data, size)
			case 1, 4: // xor
				for i, b := range data {
					if p+int64(i) < size {
						var c [1]byte
						fh.ReadAt(c[:], p+int64(i))
						c[0] ^= b
						fh.WriteAt(c[:], p+int64(i))
					}
				}
			case 2: // truncate
				fh.Truncate(p)
			case 3: // overwrite
				fh.WriteAt(data, p)
			}
			fh.Sync()
			fh.Close()
		}
		fs.SyncDir("/d")

		l, err := Open(o)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open: %v", err)
			}
			return
		}
		defer l.Close()
		checkServedPrefix(t, l, m)
		// The log keeps working: append after whatever survived, read it back.
		ents := []Entry{{Index: l.LastIndex() + 1, Term: max(l.LastTerm(), 9), Type: EntryData, Data: makeBatch(2, 5, 10, 1)}}
		if err := l.Append(ents); err != nil {
			t.Fatal(err)
		}
		e := ents[0]
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		got, err := l.ReadBatches(e.BaseOffset, 1, e.BaseOffset+2)
		if err != nil || recordbatch.BaseOffset(got) != e.BaseOffset || !kafkaCRCOK(got) {
			t.Fatalf("read back appended batch: %v", err)
		}
	})
}

// checkServedPrefix reads everything the log serves (stopping at a reported corruption)
// and checks it is an intact prefix of what the model wrote.
func checkServedPrefix(t *testing.T, l *Log, m *model) {
	t.Helper()
	if l.LastIndex() > m.lastIndex() || l.FirstIndex() != 1 {
		t.Fatalf("log [%d, %d] is not within what was written [1, %d]", l.FirstIndex(), l.LastIndex(), m.lastIndex())
	}
	if l.LastIndex() < m.lastIndex() {
		want := m.ents[l.LastIndex()].BaseOffset
		if l.LogEndOffset() != want {
			t.Fatalf("LogEndOffset %d, want %d for last index %d", l.LogEndOffset(), want, l.LastIndex())
		}
	}
	var served []byte
	next := l.LogStartOffset()
	for next < l.LogEndOffset() {
		b, err := l.ReadBatches(next, 700, l.LogEndOffset())
		if err != nil {
			if errors.Is(err, ErrCorrupt) {
				break
			}
			t.Fatalf("ReadBatches(%d): %v", next, err)
		}
		bs := splitBatches(t, b) // Kafka CRCs and consecutive offsets
		if len(bs) == 0 {
			t.Fatalf("no progress at %d", next)
		}
		if recordbatch.BaseOffset(bs[0]) != next {
			t.Fatalf("read at %d started at %d", next, recordbatch.BaseOffset(bs[0]))
		}
		last := bs[len(bs)-1]
		next = recordbatch.BaseOffset(last) + int64(recordbatch.Records(last))
		served = append(served, b...)
	}
	var want []byte
	for _, e := range m.ents {
		if e.Type == EntryData {
			want = append(want, e.Data...)
		}
	}
	if !bytes.HasPrefix(want, served) {
		t.Fatalf("served %d bytes that are not a prefix of what was written", len(served))
	}
	ents, err := l.Entries(1, l.LastIndex()+1, 1<<40)
	if err != nil && !errors.Is(err, ErrCorrupt) {
		t.Fatal(err)
	}
	for i, e := range ents {
		w := m.ents[i]
		if e.Index != w.Index || e.Term != w.Term || e.Type != w.Type || !bytes.Equal(e.Data, w.Data) {
			t.Fatalf("entry %d differs from what was written", w.Index)
		}
	}
	for idx := l.FirstIndex(); idx <= l.LastIndex(); idx++ {
		if term, err := l.Term(idx); err != nil || term != m.ents[idx-1].Term {
			t.Fatalf("Term(%d) = %d %v, want %d", idx, term, err, m.ents[idx-1].Term)
		}
	}
	_ = fmt.Sprint()
}

// TestBitRotInTrustedSegment damages a closed segment whose index files Open trusts (so
// Open does not rescan it): reads serve the intact batches before the damage and report
// ErrCorrupt at it, never the damaged bytes.
func TestBitRotInTrustedSegment(t *testing.T) {
	fs := NewMemFS()
	o := Options{FS: fs, Dir: "/d", SegmentBytes: 2000}
	l := mustOpen(t, o)
	m := newModel()
	for i := 0; i < 30; i++ {
		m.append(t, l, m.data(1, 2, int64(i), 100))
	}
	l.Close()
	first := l.segs[0]
	// Flip a byte in the payload of the segment's third entry.
	pos := int64(segHeaderSize) + 2*m.ents[0].size() + entryHeaderSize + 70
	f, _ := fs.OpenFile("/d/00000000000000000001.log", os.O_RDWR, 0)
	var c [1]byte
	f.ReadAt(c[:], pos)
	c[0] ^= 1
	f.WriteAt(c[:], pos)
	f.Sync()
	f.Close()
	l = mustOpen(t, o)
	defer l.Close()
	if l.LastIndex() != m.lastIndex() || !l.segs[0].indexWritten || first.baseIndex != l.segs[0].baseIndex {
		t.Fatal("the closed segment was not trusted")
	}
	got, err := l.ReadBatches(0, 1<<20, m.leo())
	if err != nil {
		t.Fatal(err)
	}
	if want := append(append([]byte(nil), m.ents[0].Data...), m.ents[1].Data...); !bytes.Equal(got, want) {
		t.Fatalf("served %d bytes, want the 2 intact batches (%d bytes)", len(got), len(want))
	}
	if _, err := l.ReadBatches(4, 1<<20, m.leo()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read at the damaged batch: %v", err)
	}
	if _, err := l.Entries(1, 10, 1<<20); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Entries over the damage: %v", err)
	}
	// A read that must scan across the damage fails too; the next segment reads fine.
	if _, err := l.ReadBatches(6, 1<<20, m.leo()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read behind the damaged batch: %v", err)
	}
	next := l.segs[1].baseOffset
	if got, err := l.ReadBatches(next, 1<<20, m.leo()); err != nil || recordbatch.BaseOffset(got) != next {
		t.Fatalf("read in the next segment: %v", err)
	}
}

// TestClassifyDirEntries pins which files Open removes as strays before it reads the
// segments: temporary files and index files without their segment, never a file it does
// not know, and segments in index order whatever order the directory lists them in.
func TestClassifyDirEntries(t *testing.T) {
	names := []string{
		"00000000000000000030.log",
		"00000000000000000030.index",
		"00000000000000000007.index",     // its segment is gone
		"00000000000000000007.timeindex", // likewise
		"00000000000000000030.timeindex",
		"00000000000000000001.log",
		"00000000000000000001.log.tmp", // an interrupted compaction
		checkpointName,
		"operator-notes.txt",
	}
	bases, stray := classifyDirEntries(names)
	if fmt.Sprint(bases) != "[1 30]" {
		t.Errorf("segments %v, want [1 30]", bases)
	}
	want := "[00000000000000000001.log.tmp 00000000000000000007.index 00000000000000000007.timeindex]"
	if fmt.Sprint(stray) != want {
		t.Errorf("strays %v, want %s", stray, want)
	}
}

// FuzzOpenArbitrarySegment opens a log whose only segment holds arbitrary bytes after a
// valid header (or arbitrary bytes altogether) and checks what a restarted broker relies
// on: Open never panics, fails only with ErrCorrupt, and otherwise serves entries with
// consecutive indexes, non-decreasing terms and intact batches at consecutive offsets,
// all of it flushed; a second Open recovers the same log; and the log takes appends.
func FuzzOpenArbitrarySegment(f *testing.F) {
	fs, o, _ := buildFuzzLog(f)
	o.SegmentBytes = 1 << 20 // keep whatever the input holds in one segment
	first, err := ReadFile(fs, segPath(o.Dir, 1, logSuffix))
	if err != nil {
		f.Fatal(err)
	}
	body := first[segHeaderSize:]
	f.Add(true, body)                          // a valid closed segment, now the active one
	f.Add(true, body[:len(body)/2])            // torn mid-entry
	f.Add(true, append(body[:80:80], body...)) // a valid entry cut short, then more
	f.Add(true, []byte{})                      // an empty segment
	f.Add(false, first)                        // the header itself is fuzzed
	f.Fuzz(func(t *testing.T, withHeader bool, data []byte) {
		fs := NewMemFS()
		if err := fs.MkdirAll(o.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		content := data
		if withHeader {
			content = append(encodeSegHeader(segHeader{baseIndex: 1}), data...)
		}
		if err := WriteFileAtomic(fs, segPath(o.Dir, 1, logSuffix), content); err != nil {
			t.Fatal(err)
		}
		opts := o
		opts.FS = fs
		l, err := Open(opts)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open: %v", err)
			}
			return
		}
		if l.FlushedIndex() != l.LastIndex() || l.FlushedOffset() != l.LogEndOffset() {
			t.Fatalf("flushed (%d, %d) short of the recovered log (%d, %d)",
				l.FlushedIndex(), l.FlushedOffset(), l.LastIndex(), l.LogEndOffset())
		}
		ents, err := l.Entries(l.FirstIndex(), l.LastIndex()+1, 1<<40)
		if err != nil {
			t.Fatalf("Entries over the recovered log: %v", err)
		}
		term := l.prevTerm()
		for i, e := range ents {
			if e.Index != l.FirstIndex()+uint64(i) || e.Term < term {
				t.Fatalf("entry %d: index %d term %d after term %d", i, e.Index, e.Term, term)
			}
			term = e.Term
		}
		if len(ents) != int(l.LastIndex()+1-l.FirstIndex()) {
			t.Fatalf("%d entries for indexes [%d, %d]", len(ents), l.FirstIndex(), l.LastIndex())
		}
		if l.LogEndOffset() > l.LogStartOffset() {
			b, err := l.ReadBatches(l.LogStartOffset(), 1<<30, l.LogEndOffset())
			if err != nil {
				t.Fatalf("ReadBatches over the recovered log: %v", err)
			}
			bs := splitBatches(t, b)
			if len(bs) == 0 || recordbatch.BaseOffset(bs[0]) != l.LogStartOffset() {
				t.Fatalf("read from %d served %d batches", l.LogStartOffset(), len(bs))
			}
		}
		last, lastTerm, leo := l.LastIndex(), l.LastTerm(), l.LogEndOffset()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, opts)
		defer l.Close()
		if l.LastIndex() != last || l.LastTerm() != lastTerm || l.LogEndOffset() != leo {
			t.Fatalf("second Open: (%d, %d, %d), first (%d, %d, %d)",
				l.LastIndex(), l.LastTerm(), l.LogEndOffset(), last, lastTerm, leo)
		}
		app := []Entry{{Index: last + 1, Term: max(lastTerm, 1), Type: EntryData, Data: makeBatch(2, 5, 10, 1)}}
		if err := l.Append(app); err != nil {
			t.Fatal(err)
		}
		got, err := l.ReadBatches(app[0].BaseOffset, 1, app[0].BaseOffset+2)
		if err != nil || recordbatch.BaseOffset(got) != app[0].BaseOffset || !kafkaCRCOK(got) {
			t.Fatalf("read back appended batch: %v", err)
		}
	})
}
