package storage

import (
	"bytes"
	"fmt"
	"time"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// makeBatch builds a Kafka RecordBatch v2 with n records whose timestamps are
// firstTs, firstTs+1, ..., each with a null key and a value of valueSize bytes derived from
// seed. baseOffset is 0 and partitionLeaderEpoch -1, as a producer sends it.
func makeBatch(n int, firstTs int64, valueSize int, seed byte) []byte {
	recs := make([]recordbatch.NewRecord, n)
	for i := range recs {
		v := make([]byte, valueSize)
		for j := range v {
			v[j] = seed + byte(i*31+j)
		}
		recs[i] = recordbatch.NewRecord{Value: v, TimestampDelta: int64(i)}
	}
	return recordbatch.Encode(recordbatch.PlainHeader(firstTs, firstTs+int64(n)-1), recs)
}

// kafkaCRCOK reports whether a batch's own CRC32C is valid.
func kafkaCRCOK(b []byte) bool {
	return len(b) >= recordbatch.HeaderSize && recordbatch.CRCValid(b)
}

// splitBatches splits ReadBatches output into batches, checking each one's framing,
// Kafka CRC and that offsets are consecutive.
func splitBatches(t tT, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	var next int64 = -1
	for len(b) > 0 {
		if len(b) < recordbatch.HeaderSize {
			t.Fatalf("trailing %d bytes", len(b))
		}
		n := recordbatch.Size(b)
		if n > int64(len(b)) {
			t.Fatalf("batch of %d bytes, only %d left", n, len(b))
		}
		batch := b[:n]
		if !kafkaCRCOK(batch) {
			t.Fatalf("batch at offset %d: bad Kafka CRC", recordbatch.BaseOffset(batch))
		}
		if next >= 0 && recordbatch.BaseOffset(batch) != next {
			t.Fatalf("batch base %d, want %d (not consecutive)", recordbatch.BaseOffset(batch), next)
		}
		next = recordbatch.BaseOffset(batch) + int64(recordbatch.Records(batch))
		out = append(out, batch)
		b = b[n:]
	}
	return out
}

// tT is what the helpers need from *testing.T, *testing.B and *rapid.T.
type tT interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// size is the encoded size of a stored entry.
func (e Entry) size() int64 { return int64(entryHeaderSize + len(e.Data)) }

// fakeClock is an injectable Options.Now.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time             { return c.t }
func (c *fakeClock) Advance(d time.Duration)    { c.t = c.t.Add(d) }
func newClock() *fakeClock                      { return &fakeClock{t: time.UnixMilli(1_700_000_000_000)} }
func memOpts(fs FS, dir string) Options         { return Options{FS: fs, Dir: dir} }
func (c *fakeClock) ms() int64                  { return c.t.UnixMilli() }
func withClock(o Options, c *fakeClock) Options { o.Now = c.Now; return o }

func mustOpen(t tT, o Options) *Log {
	t.Helper()
	l, err := Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

// model is what a test expects the log to hold: entries in order, with Data as stored
// (patched).
type model struct {
	ents []Entry
	lso  int64
	// first index and the offset/term before it (after prefix deletions or Reset)
	firstIndex uint64
	baseOffset int64
	prevTerm   uint64
}

func newModel() *model { return &model{firstIndex: 1} }

func (m *model) lastIndex() uint64 { return m.firstIndex + uint64(len(m.ents)) - 1 }
func (m *model) lastTerm() uint64 {
	if len(m.ents) == 0 {
		return m.prevTerm
	}
	return m.ents[len(m.ents)-1].Term
}
func (m *model) leo() int64 {
	if len(m.ents) == 0 {
		return m.baseOffset
	}
	e := m.ents[len(m.ents)-1]
	return e.BaseOffset + int64(e.Records)
}

// patched returns the stored form of a data entry's batch.
func patched(e Entry) []byte {
	d := append([]byte(nil), e.Data...)
	if e.Type == EntryData {
		recordbatch.SetBaseOffset(d, e.BaseOffset)
		recordbatch.SetLeaderEpoch(d, int32(e.Term))
	}
	return d
}

// appendEntries appends data/internal entries to both the log and the model.
func (m *model) append(t tT, l *Log, ents ...Entry) {
	t.Helper()
	if err := l.Append(ents); err != nil {
		t.Fatalf("Append: %v", err)
	}
	for _, e := range ents {
		st := e
		st.Data = patched(e)
		m.ents = append(m.ents, st)
	}
}

// dataEntry makes the next data entry for the model with n records.
func (m *model) data(term uint64, n int, ts int64, size int) Entry {
	idx := m.lastIndex() + 1
	return Entry{Index: idx, Term: term, Type: EntryData, Data: makeBatch(n, ts, size, byte(idx))}
}

func (m *model) internal(term uint64, payload string) Entry {
	return Entry{Index: m.lastIndex() + 1, Term: term, Type: EntryInternal, Data: []byte(payload)}
}

// truncate drops entries from index on.
func (m *model) truncate(from uint64) {
	if from <= m.lastIndex() {
		m.ents = m.ents[:from-m.firstIndex]
	}
	if m.lso > m.leo() {
		m.lso = m.leo()
	}
}

// batchAt returns the stored batch holding offset, or nil.
func (m *model) batchAt(off int64) (int, bool) {
	for i, e := range m.ents {
		if e.Type == EntryData && e.BaseOffset <= off && off < e.BaseOffset+int64(e.Records) {
			return i, true
		}
	}
	return 0, false
}

// expectRead computes what ReadBatches must return.
func (m *model) expectRead(off int64, maxBytes int, upTo int64) []byte {
	i, ok := m.batchAt(off)
	if !ok || off >= upTo {
		return nil
	}
	var out []byte
	for ; i < len(m.ents); i++ {
		e := m.ents[i]
		if e.Type != EntryData {
			continue
		}
		if e.BaseOffset >= upTo {
			break
		}
		if len(out) > 0 && len(out)+len(e.Data) > maxBytes {
			break
		}
		out = append(out, e.Data...)
	}
	return out
}

// check compares the log's boundaries and contents with the model.
func (m *model) check(t tT, l *Log) {
	t.Helper()
	if got, want := l.LastIndex(), m.lastIndex(); got != want {
		t.Fatalf("LastIndex = %d, want %d", got, want)
	}
	if got, want := l.LogEndOffset(), m.leo(); got != want {
		t.Fatalf("LogEndOffset = %d, want %d", got, want)
	}
	if got, want := l.LastTerm(), m.lastTerm(); got != want {
		t.Fatalf("LastTerm = %d, want %d", got, want)
	}
	if got := l.LogStartOffset(); got != m.lso {
		t.Fatalf("LogStartOffset = %d, want %d", got, m.lso)
	}
	fi := l.FirstIndex()
	if fi < m.firstIndex {
		t.Fatalf("FirstIndex = %d < model %d", fi, m.firstIndex)
	}
	// Entries from FirstIndex to the end.
	if fi <= m.lastIndex() {
		ents, err := l.Entries(fi, m.lastIndex()+1, 1<<62)
		if err != nil {
			t.Fatalf("Entries(%d, %d): %v", fi, m.lastIndex()+1, err)
		}
		want := m.ents[fi-m.firstIndex:]
		if len(ents) != len(want) {
			t.Fatalf("Entries: got %d entries, want %d", len(ents), len(want))
		}
		for i := range ents {
			g, w := ents[i], want[i]
			if g.Index != w.Index || g.Term != w.Term || g.Type != w.Type || g.BaseOffset != w.BaseOffset ||
				g.Records != w.Records || !bytes.Equal(g.Data, w.Data) {
				t.Fatalf("entry %d: got %+v, want %+v", w.Index, summary(g), summary(w))
			}
		}
	}
	// The end offset of every entry, as Raft boundaries are mapped to offsets.
	for idx := fi - 1; idx <= m.lastIndex() && idx+1 >= m.firstIndex && fi > 0; idx++ {
		want := m.baseOffset
		if idx >= m.firstIndex {
			e := m.ents[idx-m.firstIndex]
			want = e.BaseOffset + int64(e.Records)
		} else if idx+1 == fi && fi > m.firstIndex {
			e := m.ents[fi-1-m.firstIndex]
			want = e.BaseOffset + int64(e.Records)
		}
		got, err := l.EndOffsetAt(idx)
		if err != nil {
			t.Fatalf("EndOffsetAt(%d): %v", idx, err)
		}
		if got != want {
			t.Fatalf("EndOffsetAt(%d) = %d, want %d", idx, got, want)
		}
	}
	// A full read from the log start.
	if m.lso < m.leo() {
		got, err := l.ReadBatches(m.lso, 1<<30, m.leo())
		if err != nil {
			t.Fatalf("ReadBatches(%d): %v", m.lso, err)
		}
		if want := m.expectRead(m.lso, 1<<30, m.leo()); !bytes.Equal(got, want) {
			t.Fatalf("ReadBatches(%d): got %d bytes, want %d", m.lso, len(got), len(want))
		}
		splitBatches(t, got)
	}
}

func summary(e Entry) string {
	return fmt.Sprintf("{idx %d term %d type %d off %d recs %d ts %d len %d}", e.Index, e.Term, e.Type, e.BaseOffset, e.Records, e.MaxTimestamp, len(e.Data))
}
