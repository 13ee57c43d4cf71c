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
