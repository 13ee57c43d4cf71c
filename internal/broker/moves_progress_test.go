package broker

import (
	"reflect"
	"testing"
)

func TestMoveProgressRoundTrip(t *testing.T) {
	in := []moveReport{
		{group: 7, progress: MoveProgress{Phase: "catching_up", Waiting: "learner 4 at 120 of 5000", BytesMoved: 10, BytesLeft: 1 << 40}},
		{group: 1 << 40, progress: MoveProgress{Phase: "joint"}},
	}
	out, err := decodeMoveProgress(encodeMoveProgress(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: got %+v, want %+v", out, in)
	}
	for _, bad := range [][]byte{nil, {2, 0}, {1}, {1, 1}, {1, 0, 0}, {1, 1, 7, 200}} {
		if _, err := decodeMoveProgress(bad); err == nil {
			t.Errorf("decoded % x", bad)
		}
	}
}

func FuzzDecodeMoveProgress(f *testing.F) {
	f.Add(encodeMoveProgress([]moveReport{{group: 3, progress: MoveProgress{Phase: "joint", BytesLeft: 5}}}))
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		list, err := decodeMoveProgress(b)
		if err != nil {
			return
		}
		again, err := decodeMoveProgress(encodeMoveProgress(list))
		if err != nil || !reflect.DeepEqual(list, again) {
			t.Fatalf("re-encoding %+v: %v %+v", list, err, again)
		}
	})
}
