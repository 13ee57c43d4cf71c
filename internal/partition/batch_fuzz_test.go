package partition

import (
	"testing"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

// FuzzSplitBatches feeds arbitrary produce payloads to the validator: it must never panic,
// and whatever it accepts must be whole batches with a valid CRC that tile the payload.
func FuzzSplitBatches(f *testing.F) {
	good := kafkatest.Plain(3, 1000).Bytes()
	f.Add(good)
	f.Add(append(append([]byte(nil), good...), good...))
	f.Add(good[:30])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, payload []byte) {
		batches, headers, err := SplitBatches(payload, 1<<20)
		if err != nil {
			return
		}
		total := 0
		for i, b := range batches {
			h, ok := recordbatch.ParseHeader(b)
			if !ok || h != headers[i] || h.Size() != int64(len(b)) || h.Magic != recordbatch.Magic {
				t.Fatalf("accepted a malformed batch: %+v", h)
			}
			total += len(b)
		}
		if total != len(payload) {
			t.Fatalf("accepted batches cover %d of %d bytes", total, len(payload))
		}
	})
}

// FuzzParseMarker feeds arbitrary bytes to the marker decoder the producer-table rebuild
// uses: it must never panic, and a marker EncodeControl built reads back as written.
func FuzzParseMarker(f *testing.F) {
	h := recordbatch.PlainHeader(1000, 1000)
	h.ProducerID, h.ProducerEpoch = 7, 3
	f.Add(recordbatch.EncodeControl(h, recordbatch.ControlCommit, 5), true, int32(5))
	f.Add(recordbatch.EncodeControl(h, recordbatch.ControlAbort, -1), false, int32(-1))
	f.Add(kafkatest.Plain(1, 1000).Bytes(), false, int32(0))
	f.Add([]byte{}, false, int32(0))
	f.Fuzz(func(t *testing.T, batch []byte, commit bool, coordEpoch int32) {
		parseMarker(batch)
		typ := recordbatch.ControlAbort
		if commit {
			typ = recordbatch.ControlCommit
		}
		gotCommit, gotEpoch, ok := parseMarker(recordbatch.EncodeControl(h, typ, coordEpoch))
		if !ok || gotCommit != commit || gotEpoch != coordEpoch {
			t.Fatalf("marker (commit %v, coordinator epoch %d) read back as (%v, %d, %v)", commit, coordEpoch, gotCommit, gotEpoch, ok)
		}
	})
}
