package partition

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/kafkatest"
)

// A consumer whose last fetched epoch ended below where it asks to read is told where to
// truncate (KIP-595's diverging epoch) and gets no records; one that is consistent reads
// on; a stale leader epoch is fenced before any divergence is reported; and a full
// response gets only the boundaries.
func TestServeFetchDivergingEpoch(t *testing.T) {
	h := newHarness(t, defaultConfig())
	first := h.p.LeaderEpoch()
	h.produce(kafkatest.Plain(2, 1000).Bytes(), -1) // offsets 0-1, in the first epoch
	h.reopen()
	second := h.p.LeaderEpoch()
	h.produce(kafkatest.Plain(1, 1000).Bytes(), -1) // offset 2, in the second
	b := h.p.Boundaries()

	res := h.p.ServeFetch(FetchRequest{Offset: 3, MaxBytes: 1 << 20, CurrentLeaderEpoch: second, LastFetchedEpoch: first})
	if res.Diverging == nil || *res.Diverging != (EpochEnd{Epoch: first, EndOffset: 2}) {
		t.Fatalf("epoch %d ended at 2, the consumer asks for 3: diverging %+v, want {%d 2}", first, res.Diverging, first)
	}
	if res.Err != nil || res.Size() != 0 || res.HighWatermark != b.LastVisible || res.LogStart != b.LogStart {
		t.Fatalf("diverging answer: %+v, boundaries %+v", res, b)
	}

	res = h.p.ServeFetch(FetchRequest{Offset: 2, MaxBytes: 1 << 20, CurrentLeaderEpoch: second, LastFetchedEpoch: first})
	if res.Diverging != nil || res.Err != nil || res.Size() == 0 {
		t.Fatalf("a consumer at the end of epoch %d reads on: %+v", first, res)
	}
	res.Release()

	res = h.p.ServeFetch(FetchRequest{Offset: 3, MaxBytes: 1 << 20, CurrentLeaderEpoch: first, LastFetchedEpoch: first})
	if res.Diverging != nil || res.Err != kerr.FencedLeaderEpoch {
		t.Fatalf("a stale leader epoch is fenced first: %+v", res)
	}

	res = h.p.ServeFetch(FetchRequest{Offset: 0, MaxBytes: 0, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1})
	if res.Err != nil || res.Size() != 0 || res.HighWatermark != b.LastVisible || res.LogStart != b.LogStart {
		t.Fatalf("a full response gets the boundaries only: %+v", res)
	}
}
