package recordbatch_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

func seedBatches() [][]byte {
	var out [][]byte
	for i, codec := range kafkatest.Codecs {
		out = append(out, kvBatch(5, codec, i%2 == 0, rec("a", "1"), tomb("b"), kv{Value: []byte("no key")}))
	}
	h := recordbatch.PlainHeader(1, 1)
	h.ProducerID = 7
	return append(out, kafkatest.Plain(3, 1).Bytes(), recordbatch.EncodeControl(h, recordbatch.ControlCommit, 0), []byte{})
}

// FuzzParseHeader: the header parse and the framing checks never panic, and agree: a batch
// Check accepts parses, with the size and magic Check saw.
func FuzzParseHeader(f *testing.F) {
	for _, b := range seedBatches() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, ok := recordbatch.ParseHeader(b)
		if ok != (len(b) >= recordbatch.HeaderSize) {
			t.Fatalf("ParseHeader of %d bytes: %v", len(b), ok)
		}
		if len(b) >= recordbatch.HeadSize {
			headErr := recordbatch.CheckHead(b[:recordbatch.HeadSize], int64(len(b)))
			if err := recordbatch.Check(b); ok && (err == nil) != (headErr == nil) {
				t.Fatalf("Check %v but CheckHead %v", err, headErr)
			}
		}
		if recordbatch.Check(b) != nil {
			return
		}
		if !ok || h.Size() != int64(len(b)) || h.Magic != recordbatch.Magic || h.Records() < 1 {
			t.Fatalf("Check accepted %+v of %d bytes", h, len(b))
		}
	})
}

// FuzzDecodeRecords: the record walk never panics, its three users (DecodeRecords,
// CheckRecords, RecordTimes) accept the same batches, and what it accepts is what it says:
// as many records as the header counts, tiling the plain section in offset order.
func FuzzDecodeRecords(f *testing.F) {
	for _, b := range seedBatches() {
		f.Add(b)
	}
	defer recordbatch.SetMaxDecompressed(1 << 20)()
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := bytes.Clone(b)
		recs, plain, err := recordbatch.DecodeRecords(b, nil)
		if !bytes.Equal(b, orig) {
			t.Fatal("input modified")
		}
		times, terr := recordbatch.RecordTimes(b)
		if cerr := recordbatch.CheckRecords(b, false); (cerr == nil) != (err == nil) || (terr == nil) != (err == nil) {
			t.Fatalf("DecodeRecords %v, CheckRecords %v, RecordTimes %v", err, cerr, terr)
		}
		if err != nil {
			return
		}
		if len(times) != len(recs) {
			t.Fatalf("%d record times for %d records", len(times), len(recs))
		}
		h, _ := recordbatch.ParseHeader(b)
		if int32(len(recs)) != h.NumRecords {
			t.Fatalf("%d records, header says %d", len(recs), h.NumRecords)
		}
		var joined []byte
		for i, r := range recs {
			if r.OffsetDelta > h.LastOffsetDelta || (i > 0 && r.OffsetDelta <= recs[i-1].OffsetDelta) {
				t.Fatalf("record %d: offset delta %d out of order", i, r.OffsetDelta)
			}
			if r.NullKey != (r.Key == nil) || r.Tombstone != (r.Value == nil) {
				t.Fatalf("record %d: null flags disagree with the fields", i)
			}
			joined = append(joined, r.Raw...)
		}
		if !bytes.Equal(joined, plain) {
			t.Fatal("the records do not tile the plain section")
		}
	})
}

// FuzzParseControl: no input panics ParseControl, and a batch it reads as a marker is a
// control batch whose one record's key says so.
func FuzzParseControl(f *testing.F) {
	for _, b := range seedBatches() {
		f.Add(b)
	}
	h := recordbatch.PlainHeader(1, 1)
	f.Add(recordbatch.EncodeControl(h, recordbatch.ControlCommit, 3))
	f.Add(recordbatch.EncodeControl(h, recordbatch.ControlAbort, 0))
	defer recordbatch.SetMaxDecompressed(1 << 20)()
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, ok := recordbatch.ParseControl(b)
		if !ok {
			return
		}
		recs, _, err := recordbatch.DecodeRecords(b, nil)
		if err != nil || len(recs) != 1 || recordbatch.Attributes(b)&recordbatch.AttrControl == 0 ||
			int16(binary.BigEndian.Uint16(recs[0].Key[2:])) != int16(typ) {
			t.Fatalf("ParseControl = %v on a batch that is not that marker", typ)
		}
	})
}

// FuzzDecompress: no codec panics or inflates beyond the bound on any input, and what one
// decompresses survives Compress and Decompress again.
func FuzzDecompress(f *testing.F) {
	plain := bytes.Repeat([]byte("seed records "), 50)
	for _, codec := range kafkatest.Codecs {
		for _, xerial := range []bool{false, true} {
			f.Add(uint8(codec), kafkatest.Compress(codec, plain, xerial))
		}
	}
	f.Add(uint8(7), []byte{1, 2, 3})
	const limit = 1 << 20
	defer recordbatch.SetMaxDecompressed(limit)()
	f.Fuzz(func(t *testing.T, codec uint8, src []byte) {
		out, err := recordbatch.Decompress(int(codec), src)
		if err != nil {
			return
		}
		if len(out) > limit {
			t.Fatalf("codec %d inflated %d bytes to %d", codec, len(src), len(out))
		}
		again, err := recordbatch.Compress(int(codec), out, src)
		if err != nil {
			t.Fatalf("codec %d: Compress: %v", codec, err)
		}
		if back, err := recordbatch.Decompress(int(codec), again); err != nil || !bytes.Equal(back, out) {
			t.Fatalf("codec %d: round trip: %v", codec, err)
		}
	})
}
