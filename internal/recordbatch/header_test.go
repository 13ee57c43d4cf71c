package recordbatch_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

func TestChecksumIsCRC32C(t *testing.T) {
	// The CRC-32C check value (RFC 3720, appendix B.4).
	if got := recordbatch.Checksum([]byte("123456789")); got != 0xe3069283 {
		t.Fatalf("Checksum(123456789) = %#x, want 0xe3069283", got)
	}
}

// The header fields sit where Kafka's own encoding (kmsg) puts them.
func TestHeaderMatchesKafkasLayout(t *testing.T) {
	h := recordbatch.Header{
		BaseOffset: 1 << 40, LeaderEpoch: 7, Attributes: recordbatch.CodecLZ4 | recordbatch.AttrLogAppendTime,
		LastOffsetDelta: 4, FirstTimestamp: 1000, MaxTimestamp: 1004, ProducerID: 99, ProducerEpoch: 3,
		BaseSequence: 12, NumRecords: 5,
	}
	b := recordbatch.Assemble(h, []byte("opaque records"))
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	want := kmsg.RecordBatch{
		FirstOffset: h.BaseOffset, Length: int32(len(b) - recordbatch.LengthEnd), PartitionLeaderEpoch: h.LeaderEpoch,
		Magic: 2, CRC: rb.CRC, Attributes: h.Attributes, LastOffsetDelta: h.LastOffsetDelta,
		FirstTimestamp: h.FirstTimestamp, MaxTimestamp: h.MaxTimestamp, ProducerID: h.ProducerID,
		ProducerEpoch: h.ProducerEpoch, FirstSequence: h.BaseSequence, NumRecords: h.NumRecords,
		Records: []byte("opaque records"),
	}
	if rb.FirstOffset != want.FirstOffset || rb.Length != want.Length || rb.PartitionLeaderEpoch != want.PartitionLeaderEpoch ||
		rb.Magic != want.Magic || rb.Attributes != want.Attributes || rb.LastOffsetDelta != want.LastOffsetDelta ||
		rb.FirstTimestamp != want.FirstTimestamp || rb.MaxTimestamp != want.MaxTimestamp || rb.ProducerID != want.ProducerID ||
		rb.ProducerEpoch != want.ProducerEpoch || rb.FirstSequence != want.FirstSequence || rb.NumRecords != want.NumRecords ||
		string(rb.Records) != string(want.Records) {
		t.Fatalf("kmsg reads %+v, want %+v", rb, want)
	}
	if uint32(rb.CRC) != recordbatch.Checksum(b[recordbatch.AttributesPos:]) || !recordbatch.CRCValid(b) {
		t.Fatal("the CRC does not cover the bytes from the attributes on")
	}
	got, ok := recordbatch.ParseHeader(b)
	h.Length, h.Magic = want.Length, 2
	if !ok || got != h {
		t.Fatalf("ParseHeader = %+v, %v; want %+v", got, ok, h)
	}
	if recordbatch.BaseOffset(b) != h.BaseOffset || recordbatch.Size(b) != int64(len(b)) || recordbatch.Records(b) != 5 ||
		recordbatch.MaxTimestamp(b) != 1004 || recordbatch.Attributes(b) != h.Attributes || got.Codec() != recordbatch.CodecLZ4 {
		t.Fatal("an accessor disagrees with ParseHeader")
	}
	// The fields a broker sets are outside the CRC.
	recordbatch.SetBaseOffset(b, 5)
	recordbatch.SetLeaderEpoch(b, 9)
	if got, _ := recordbatch.ParseHeader(b); got.BaseOffset != 5 || got.LeaderEpoch != 9 || !recordbatch.CRCValid(b) {
		t.Fatalf("after setting base offset and epoch: %+v, crc valid %v", got, recordbatch.CRCValid(b))
	}
	b[len(b)-1] ^= 1
	if recordbatch.CRCValid(b) {
		t.Fatal("a changed record byte kept the CRC valid")
	}
	if _, ok := recordbatch.ParseHeader(b[:recordbatch.HeaderSize-1]); ok {
		t.Fatal("parsed a header from too few bytes")
	}
}

func TestLastSequenceWraps(t *testing.T) {
	for _, c := range []struct{ base, delta, want int32 }{{0, 4, 4}, {10, 0, 10}, {0x7ffffffe, 3, 1}} {
		if got := (recordbatch.Header{BaseSequence: c.base, LastOffsetDelta: c.delta}).LastSequence(); got != c.want {
			t.Errorf("base %d delta %d: %d, want %d", c.base, c.delta, got, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	good := kafkatest.Plain(3, 1000).Bytes()
	if err := recordbatch.Check(good); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		damage func([]byte) []byte
		msg    string
	}{
		{"short", func(b []byte) []byte { return b[:60] }, "60 bytes, want at least 61"},
		{"length", func(b []byte) []byte { return b[:len(b)-1] }, "does not match"},
		{"magic", func(b []byte) []byte { b[recordbatch.MagicPos] = 1; return b }, "magic 1, want 2"},
		{"last offset delta", func(b []byte) []byte {
			be.PutUint32(b[recordbatch.LastOffsetDeltaPos:], 0xffffffff)
			return b
		}, "lastOffsetDelta -1"},
	} {
		err := recordbatch.Check(c.damage(append([]byte(nil), good...)))
		if !errors.Is(err, recordbatch.ErrMalformed) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want ErrMalformed saying %q", c.name, err, c.msg)
		}
	}
	// CheckHead holds a batch known by its head and size to the same rules.
	if err := recordbatch.CheckHead(good[:recordbatch.HeadSize], int64(len(good))); err != nil {
		t.Fatal(err)
	}
	if err := recordbatch.CheckHead(good[:recordbatch.HeadSize], int64(len(good))+1); !errors.Is(err, recordbatch.ErrMalformed) {
		t.Fatalf("head with the wrong size: %v", err)
	}
}
