package storage

import (
	"os"
	"testing"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// FuzzHeaderScannerMatchesEntryReader walks arbitrary segment bytes with the sendfile
// path's header scanner and with the entry reader. Wherever the reader accepts an entry the
// scanner must report the same one, and the scanner may accept an entry the reader refuses
// only when that entry's CRC32C is wrong: the one check that needs the payload, which the
// checked watermark covers instead. Both must stop at the same place otherwise, and neither
// may panic or run past the read limit.
func FuzzHeaderScannerMatchesEntryReader(f *testing.F) {
	var valid []byte
	offset := int64(100)
	for i, e := range []Entry{
		{Index: 5, Term: 2, Type: EntryData, Data: makeBatch(3, 1000, 20, 1)},
		{Index: 6, Term: 2, Type: EntryInternal, Data: []byte("leader")},
		{Index: 7, Term: 3, Type: EntryData, Data: makeBatch(1, 1000, 1500, 2)},
		{Index: 8, Term: 3, Type: EntryData, Data: makeBatch(2, 1000, 0, 3)},
	} {
		e.BaseOffset = offset
		if e.Type == EntryData {
			offset += int64(recordbatch.Records(e.Data))
		}
		valid = appendEntry(valid, &e)
		f.Add(valid, uint64(5), int64(100), uint16(i))
	}
	f.Add(valid, uint64(4), int64(100), uint16(0))                // wrong first index
	f.Add(valid, uint64(5), int64(99), uint16(0))                 // wrong first offset
	f.Add(valid[:len(valid)-3], uint64(5), int64(100), uint16(9)) // torn tail
	f.Add([]byte{0, 0, 0, 40, 9, 9, 9}, uint64(1), int64(0), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, index uint64, offset int64, flip uint16) {
		// Also try the bytes with one bit flipped, so the fuzzer reaches damaged headers
		// inside otherwise valid segments without having to rebuild CRCs.
		if len(data) > 0 && flip&1 == 1 {
			data = append([]byte(nil), data...)
			data[int(flip>>1)%len(data)] ^= 1 << (flip % 8)
		}
		fs := NewMemFS()
		fh, err := fs.OpenFile("/seg", os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fh.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		end := int64(len(data))
		r := newEntryReader(fh, point{index: index, offset: offset}, end, 4096, nil)
		var hb [hdrWindow]byte
		h := headerScanner{f: fh, end: end, index: index, offset: offset, buf: hb[:]}
		for steps := 0; ; steps++ {
			at := r.pos
			pe, rs, rerr := r.next()
			se, ss, serr := h.next()
			if rerr != nil || serr != nil {
				t.Fatalf("entry %d at %d: I/O errors %v, %v on an in-memory file", steps, at, rerr, serr)
			}
			if rs == readOK {
				if ss != readOK || se.typ != pe.typ || se.size != int64(len(pe.payload)) {
					t.Fatalf("entry %d at %d: reader took %v/%d bytes, scanner said %d (%+v)", steps, at, pe.typ, len(pe.payload), ss, se)
				}
				if pe.typ == EntryData && (se.base != recordbatch.BaseOffset(pe.payload) || se.records != recordbatch.Records(pe.payload)) {
					t.Fatalf("entry %d at %d: scanner saw batch %d+%d, reader %d+%d", steps, at, se.base, se.records, recordbatch.BaseOffset(pe.payload), recordbatch.Records(pe.payload))
				}
				if h.pos != r.pos || h.index != r.index || h.offset != r.offset {
					t.Fatalf("entry %d: scanner at %d/%d/%d, reader at %d/%d/%d", steps, h.pos, h.index, h.offset, r.pos, r.index, r.offset)
				}
				continue
			}
			if ss == readOK {
				ent := data[at : at+entryHeaderSize+se.size]
				if be.Uint32(ent[4:8]) == entryCRC(ent) {
					t.Fatalf("entry %d at %d: scanner accepted %+v, reader refused an entry whose CRC is right", steps, at, se)
				}
			} else if ss != rs {
				t.Fatalf("entry %d at %d: reader status %d, scanner %d", steps, at, rs, ss)
			}
			return
		}
	})
}
