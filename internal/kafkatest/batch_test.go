package kafkatest

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

func TestBatchRoundTrips(t *testing.T) {
	raw := Plain(3, 1000).Bytes()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(raw); err != nil {
		t.Fatal(err)
	}
	if int(rb.Length)+12 != len(raw) || rb.NumRecords != 3 || rb.LastOffsetDelta != 2 || rb.MaxTimestamp != 1002 {
		t.Fatalf("header: %+v", rb)
	}
	if !recordbatch.CRCValid(raw) {
		t.Fatal("crc mismatch")
	}
	recs := rb.Records
	for i := 0; i < 3; i++ {
		var r kmsg.Record
		n, w := binary.Varint(recs)
		if w <= 0 {
			t.Fatal("bad length")
		}
		if err := r.ReadFrom(recs[:w+int(n)]); err != nil {
			t.Fatal(err)
		}
		if string(r.Value) != string([]byte{'v', byte('0' + i)}) || r.OffsetDelta != int32(i) {
			t.Fatalf("record %d: %+v", i, r)
		}
		recs = recs[w+int(n):]
	}
}
