package recordbatch_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

// Each codec reads what another implementation wrote, and writes what another reads.
func TestCodecsAgainstAnotherImplementation(t *testing.T) {
	var plain []byte
	for i := 0; i < 5000; i++ {
		plain = fmt.Appendf(plain, "record %d of a section that compresses well; ", i%97)
	}
	for _, codec := range kafkatest.Codecs {
		for _, xerial := range []bool{false, true} {
			theirs := kafkatest.Compress(codec, plain, xerial)
			got, err := recordbatch.Decompress(int(codec), theirs)
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("%v xerial=%v: Decompress: %d bytes, %v", codec, xerial, len(got), err)
			}
			ours, err := recordbatch.Compress(int(codec), plain, theirs)
			if err != nil {
				t.Fatal(err)
			}
			back, err := kafkatest.Decompress(codec, ours)
			if err != nil || !bytes.Equal(back, plain) {
				t.Fatalf("%v xerial=%v: kafkatest cannot read Compress: %v", codec, xerial, err)
			}
			if codec == kafkatest.CodecSnappy && recordbatch.XerialFramed(ours) != xerial {
				t.Fatalf("snappy framing not kept (xerial=%v)", xerial)
			}
		}
	}
	if _, err := recordbatch.Decompress(5, nil); err == nil {
		t.Fatal("codec 5 decompressed")
	}
}

func TestDecompressRefusesWhatInflatesBeyondTheBound(t *testing.T) {
	defer recordbatch.SetMaxDecompressed(1000)()
	plain := make([]byte, 5000)
	for _, codec := range kafkatest.Codecs[1:] {
		if _, err := recordbatch.Decompress(int(codec), kafkatest.Compress(codec, plain, false)); err == nil {
			t.Errorf("%v: 5000 bytes decompressed under a bound of 1000", codec)
		}
		if got, err := recordbatch.Decompress(int(codec), kafkatest.Compress(codec, plain[:1000], false)); err != nil || len(got) != 1000 {
			t.Errorf("%v: 1000 bytes under a bound of 1000: %d, %v", codec, len(got), err)
		}
	}
}

// Every structural rule of the records section is checked, whatever the codec.
func TestDecodeRecordsRefusesMalformedRecords(t *testing.T) {
	one := recordbatch.AppendRecord(nil, 0, recordbatch.NewRecord{Key: []byte("k"), Value: []byte("v")})
	two := recordbatch.AppendRecord(append([]byte(nil), one...), 1, recordbatch.NewRecord{Key: []byte("k2")})
	batch := func(last, count int32, section []byte) []byte {
		h := recordbatch.PlainHeader(1, 1)
		h.LastOffsetDelta, h.NumRecords = last, count
		return recordbatch.Assemble(h, section)
	}
	if recs, _, err := recordbatch.DecodeRecords(batch(1, 2, two), nil); err != nil || len(recs) != 2 || !recs[1].Tombstone {
		t.Fatalf("well-formed: %+v, %v", recs, err)
	}
	// A record with one header, which the walk must step over.
	withHeader := append([]byte{byte(len(one)-2+4) << 1}, one[1:len(one)-1]...)
	withHeader = append(withHeader, 2, 2, 'h', 0) // one header: key "h", empty value
	if _, _, err := recordbatch.DecodeRecords(batch(0, 1, withHeader), nil); err != nil {
		t.Fatalf("record with a header: %v", err)
	}
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"count above lastOffsetDelta+1", batch(0, 2, two)},
		{"negative count", batch(1, -1, two)},
		{"fewer records than the count", batch(2, 3, two)},
		{"trailing bytes", batch(1, 2, append(append([]byte(nil), two...), 0))},
		{"offset delta beyond lastOffsetDelta", batch(0, 1, two[len(one):])},
		{"offset deltas not increasing", batch(1, 2, append(append([]byte(nil), one...), one...))},
		{"records in no bytes", batch(0, 1, nil)},
		{"length beyond the section", batch(0, 1, one[:len(one)-1])},
		{"header count beyond the record", batch(0, 1, append(append([]byte{one[0]}, one[1:len(one)-1]...), 2))},
		{"unknown codec", func() []byte {
			b := batch(1, 2, two)
			be.PutUint16(b[recordbatch.AttributesPos:], 6)
			return b
		}()},
	} {
		if _, _, err := recordbatch.DecodeRecords(c.b, nil); !errors.Is(err, recordbatch.ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", c.name, err)
		}
	}
}
