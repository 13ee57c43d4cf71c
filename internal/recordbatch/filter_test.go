package recordbatch_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

var be = binary.BigEndian

// Batches in these tests are built with kafkatest, whose records and codecs are written
// apart from this package's, so that a test decodes what another encoder wrote.

type kv = kafkatest.KV

func rec(k, v string) kv { return kv{Key: []byte(k), Value: []byte(v)} }
func tomb(k string) kv   { return kv{Key: []byte(k)} }

var kvBatch = kafkatest.KeyedBatch

func kafkaCRCOK(b []byte) bool { return len(b) >= recordbatch.HeaderSize && recordbatch.CRCValid(b) }

func checkKeys(b []byte) error { return recordbatch.CheckRecords(b, true) }

func TestFilterBatchEveryCodec(t *testing.T) {
	for _, codec := range kafkatest.Codecs {
		for _, xerial := range []bool{false, true} {
			var recs []kv
			for i := 0; i < 500; i++ {
				recs = append(recs, rec(fmt.Sprint("key-", i), fmt.Sprint("value-", i, "-", bytes.Repeat([]byte("x"), i%50))))
			}
			recs[3].Value = nil
			orig := kvBatch(1000, codec, xerial, recs...)
			be.PutUint64(orig[0:], 77)
			// Keep every third record.
			out, res, _, err := recordbatch.Filter(orig, nil, func(r *recordbatch.Record, off int64) bool { return (off-77)%3 == 0 })
			if err != nil || !res.Changed || res.Kept != 167 || res.Removed != 333 {
				t.Fatalf("%v: %+v %v", codec, res, err)
			}
			rb, got, err := kafkatest.Records(out)
			if err != nil {
				t.Fatalf("%v: %v", codec, err)
			}
			if !kafkaCRCOK(out) || rb.FirstOffset != 77 || rb.LastOffsetDelta != 499 || rb.NumRecords != 167 || kafkatest.Codec(rb.Attributes&7) != codec {
				t.Fatalf("%v: header %+v", codec, rb)
			}
			if !bytes.Equal(out[:recordbatch.LengthPos], orig[:recordbatch.LengthPos]) || !bytes.Equal(out[recordbatch.LeaderEpochPos:recordbatch.CRCPos], orig[recordbatch.LeaderEpochPos:recordbatch.CRCPos]) ||
				!bytes.Equal(out[recordbatch.LastOffsetDeltaPos:recordbatch.RecordCountPos], orig[recordbatch.LastOffsetDeltaPos:recordbatch.RecordCountPos]) {
				t.Fatalf("%v: header fields changed", codec)
			}
			for i, r := range got {
				if r.OffsetDelta != int32(3*i) || string(r.Key) != fmt.Sprint("key-", 3*i) {
					t.Fatalf("%v: record %d: %+v", codec, i, r)
				}
			}
			// Keep all: the very same bytes. Keep none: an uncompressed empty batch.
			same, res, _, _ := recordbatch.Filter(orig, nil, func(*recordbatch.Record, int64) bool { return true })
			if res.Changed || &same[0] != &orig[0] {
				t.Fatalf("%v: keep-all rewrote the batch", codec)
			}
			empty, res, _, _ := recordbatch.Filter(orig, nil, func(*recordbatch.Record, int64) bool { return false })
			if len(empty) != recordbatch.HeaderSize || res.TombstonesRemoved != 1 || !kafkaCRCOK(empty) || be.Uint16(empty[recordbatch.AttributesPos:])&recordbatch.CodecMask != 0 {
				t.Fatalf("%v: empty batch %d bytes %+v", codec, len(empty), res)
			}
			if _, recs, err := kafkatest.Records(empty); err != nil || len(recs) != 0 {
				t.Fatalf("%v: empty batch: %v", codec, err)
			}
		}
	}
}

func TestCheckRecordsRequiringKeys(t *testing.T) {
	for _, codec := range kafkatest.Codecs {
		if err := checkKeys(kvBatch(1, codec, false, rec("a", "1"), tomb("b"))); err != nil {
			t.Fatalf("%v: %v", codec, err)
		}
		if err := checkKeys(kvBatch(1, codec, false, rec("a", "1"), kv{Value: []byte("x")})); !errors.Is(err, recordbatch.ErrNullKey) {
			t.Fatalf("%v: %v", codec, err)
		}
		b := kvBatch(1, codec, false, rec("a", "1"))
		b[len(b)-1] ^= 0x55
		if err := checkKeys(b); !errors.Is(err, recordbatch.ErrMalformed) {
			t.Fatalf("%v: damaged: %v", codec, err)
		}
	}
	// A batch that inflates beyond the limit is refused, not decoded.
	defer recordbatch.SetMaxDecompressed(1000)()
	for _, codec := range kafkatest.Codecs[1:] {
		big := kvBatch(1, codec, false, rec("a", string(make([]byte, 5000))))
		if err := checkKeys(big); !errors.Is(err, recordbatch.ErrMalformed) {
			t.Fatalf("%v: too large: %v", codec, err)
		}
	}
}

// FuzzFilter feeds the batch decode/filter/rewrite path arbitrary bytes: it must
// never panic, and what it rewrites must decode again to exactly the records it kept.
func FuzzFilter(f *testing.F) {
	for i, codec := range kafkatest.Codecs {
		f.Add(kvBatch(5, codec, i%2 == 0, rec("a", "1"), tomb("b"), rec("a", "2"), kv{Value: []byte("k")}), uint8(0b101))
	}
	f.Add(kafkatest.Plain(3, 1).Bytes(), uint8(1))
	f.Add([]byte{}, uint8(0))
	defer recordbatch.SetMaxDecompressed(1 << 20)()
	f.Fuzz(func(t *testing.T, batch []byte, pattern uint8) {
		orig := append([]byte(nil), batch...)
		keep := func(r *recordbatch.Record, off int64) bool { return pattern>>(uint64(off)%8)&1 != 0 }
		_ = checkKeys(batch)
		out, res, _, err := recordbatch.Filter(batch, nil, keep)
		if !bytes.Equal(batch, orig) {
			t.Fatal("input modified")
		}
		if err != nil || !res.Changed {
			return
		}
		if recordbatch.Check(out) != nil || !kafkaCRCOK(out) {
			t.Fatal("rewritten batch malformed")
		}
		if !bytes.Equal(out[:recordbatch.LengthPos], batch[:recordbatch.LengthPos]) || !bytes.Equal(out[recordbatch.LastOffsetDeltaPos:recordbatch.RecordCountPos], batch[recordbatch.LastOffsetDeltaPos:recordbatch.RecordCountPos]) {
			t.Fatal("header changed")
		}
		before, _, err := recordbatch.DecodeRecords(batch, nil)
		if err != nil {
			t.Fatal(err)
		}
		after, _, err := recordbatch.DecodeRecords(out, nil)
		if err != nil {
			t.Fatalf("rewritten batch does not decode: %v", err)
		}
		var want [][]byte
		for i := range before {
			if keep(&before[i], recordbatch.BaseOffset(batch)+int64(before[i].OffsetDelta)) {
				want = append(want, before[i].Raw)
			}
		}
		if len(after) != len(want) || len(after) != res.Kept {
			t.Fatalf("%d records after, want %d", len(after), len(want))
		}
		for i := range after {
			if !bytes.Equal(after[i].Raw, want[i]) {
				t.Fatalf("record %d differs", i)
			}
		}
		// Filtering again keeps everything and changes nothing.
		if again, res2, _, err := recordbatch.Filter(out, nil, func(*recordbatch.Record, int64) bool { return true }); err != nil || res2.Changed || !bytes.Equal(again, out) {
			t.Fatalf("second filter: %+v %v", res2, err)
		}
	})
}
