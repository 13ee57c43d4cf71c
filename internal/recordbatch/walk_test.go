package recordbatch_test

import (
	"errors"
	"testing"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// withBase sets a stored batch's base offset, as the log does when it appends it.
func withBase(b []byte, base int64) []byte {
	for i := range 8 {
		b[7-i] = byte(base >> (8 * i))
	}
	return b
}

// TestWalkRecords: the records of data batches are handed over with their offsets, a
// marker is skipped but still moves the next offset, and a cut batch is an error.
func TestWalkRecords(t *testing.T) {
	h := recordbatch.PlainHeader(1, 1)
	data := withBase(recordbatch.Encode(h, []recordbatch.NewRecord{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}}), 10)
	h.ProducerID, h.ProducerEpoch = 5, 0
	marker := withBase(recordbatch.EncodeControl(h, recordbatch.ControlCommit, 0), 12)
	raw := append(append([]byte(nil), data...), marker...)
	var got []string
	next, skipped, err := recordbatch.WalkRecords(raw, func(off int64, k, v []byte) error {
		got = append(got, string(k)+"="+string(v)+"@"+string(rune('0'+off-10)))
		return nil
	})
	if err != nil || skipped != 0 || next != 13 || len(got) != 2 || got[0] != "a=1@0" || got[1] != "b=2@1" {
		t.Fatalf("walk: %v next %d skipped %d err %v", got, next, skipped, err)
	}
	if _, _, err := recordbatch.WalkRecords(raw[:len(raw)-3], func(int64, []byte, []byte) error { return nil }); !errors.Is(err, recordbatch.ErrTruncated) {
		t.Fatalf("a cut batch: %v, want ErrTruncated", err)
	}
}
