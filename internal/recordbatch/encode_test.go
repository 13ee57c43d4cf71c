package recordbatch_test

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

// Encode writes the very bytes of a batch built with kmsg's record encoding.
func TestEncodeMatchesAnotherEncoder(t *testing.T) {
	for _, n := range []int{0, 1, 3, 200} {
		want := kafkatest.Batch{Timestamp: 5000, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
		recs := make([]recordbatch.NewRecord, n)
		for i := range recs {
			var k, v []byte
			switch i % 4 {
			case 0:
				k, v = []byte("key"), bytes.Repeat([]byte{byte(i)}, i)
			case 1:
				k, v = nil, []byte("null key")
			case 2:
				k, v = []byte("tombstone"), nil
			case 3:
				k, v = []byte{}, []byte{}
			}
			recs[i] = recordbatch.NewRecord{Key: k, Value: v, TimestampDelta: int64(i)}
			want.Keys, want.Values = append(want.Keys, k), append(want.Values, v)
		}
		got := recordbatch.Encode(recordbatch.PlainHeader(5000, 5000+int64(n)-1), recs)
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%d records: Encode and kmsg differ:\n%x\n%x", n, got, want.Bytes())
		}
		if n == 0 {
			continue // lastOffsetDelta -1: no broker stores it, so it does not decode
		}
		decoded, _, err := recordbatch.DecodeRecords(got, nil)
		if err != nil || len(decoded) != n {
			t.Fatalf("%d records: decoded %d, %v", n, len(decoded), err)
		}
		for i, r := range decoded {
			in := recs[i]
			if r.OffsetDelta != int32(i) || r.TimestampDelta != int64(i) || !bytes.Equal(r.Key, in.Key) || r.NullKey != (in.Key == nil) ||
				!bytes.Equal(r.Value, in.Value) || r.Tombstone != (in.Value == nil) {
				t.Fatalf("record %d: %+v, want %+v", i, r, in)
			}
		}
	}
}

func TestEncodeClearsTheCodec(t *testing.T) {
	h := recordbatch.PlainHeader(1, 1)
	h.Attributes = recordbatch.CodecZstd | recordbatch.AttrLogAppendTime
	b := recordbatch.Encode(h, []recordbatch.NewRecord{{Value: []byte("v")}})
	if a := recordbatch.Attributes(b); a != recordbatch.AttrLogAppendTime {
		t.Fatalf("attributes %#x", a)
	}
	if err := recordbatch.CheckRecords(b, false); err != nil {
		t.Fatal(err)
	}
}

func TestEncodeControl(t *testing.T) {
	for _, c := range []struct {
		typ  recordbatch.ControlType
		want kmsg.ControlRecordKeyType
	}{{recordbatch.ControlAbort, kmsg.ControlRecordKeyTypeAbort}, {recordbatch.ControlCommit, kmsg.ControlRecordKeyTypeCommit}} {
		h := recordbatch.PlainHeader(777, 777)
		h.ProducerID, h.ProducerEpoch = 42, 3
		b := recordbatch.EncodeControl(h, c.typ, 9)
		rb, recs, err := kafkatest.Records(b)
		if err != nil {
			t.Fatal(err)
		}
		if rb.Attributes != recordbatch.AttrControl|recordbatch.AttrTransactional || rb.ProducerID != 42 || rb.ProducerEpoch != 3 ||
			rb.NumRecords != 1 || rb.LastOffsetDelta != 0 || rb.FirstTimestamp != 777 || !recordbatch.CRCValid(b) {
			t.Fatalf("%v: header %+v", c.typ, rb)
		}
		var key kmsg.ControlRecordKey
		if err := key.ReadFrom(recs[0].Key); err != nil || key.Version != 0 || key.Type != c.want {
			t.Fatalf("%v: key %+v, %v", c.typ, key, err)
		}
		var marker kmsg.EndTxnMarker
		if err := marker.ReadFrom(recs[0].Value); err != nil || marker.Version != 0 || marker.CoordinatorEpoch != 9 {
			t.Fatalf("%v: value %+v, %v", c.typ, marker, err)
		}
		if typ, ok := recordbatch.ParseControl(b); !ok || typ != c.typ {
			t.Fatalf("%v: ParseControl = %v, %v", c.typ, typ, ok)
		}
		if _, ok := recordbatch.ParseControl(recordbatch.Encode(h, []recordbatch.NewRecord{{Key: recs[0].Key}})); ok {
			t.Fatalf("%v: a plain batch read as a control batch", c.typ)
		}
	}
}

func TestRecordTimes(t *testing.T) {
	b := kafkatest.Batch{Values: [][]byte{{1}, {2}, {3}}, Timestamp: 100, ProducerID: -1, BaseSequence: -1}.Bytes()
	recordbatch.SetBaseOffset(b, 50)
	got, err := recordbatch.RecordTimes(b)
	if err != nil || len(got) != 3 || got[0] != (recordbatch.RecordTime{Offset: 50, Timestamp: 100}) || got[2] != (recordbatch.RecordTime{Offset: 52, Timestamp: 102}) {
		t.Fatalf("create time: %+v, %v", got, err)
	}
	// Under log-append time every record carries the batch's MaxTimestamp.
	la := kafkatest.Batch{Values: [][]byte{{1}, {2}}, Timestamp: 100, ProducerID: -1, BaseSequence: -1, Attributes: recordbatch.AttrLogAppendTime}.Bytes()
	be.PutUint64(la[recordbatch.MaxTimestampPos:], 9000)
	recordbatch.SetCRC(la)
	if got, err := recordbatch.RecordTimes(la); err != nil || got[0].Timestamp != 9000 || got[1].Timestamp != 9000 {
		t.Fatalf("log append time: %+v, %v", got, err)
	}
}
