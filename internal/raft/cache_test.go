package raft

import (
	"bytes"
	"math"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"pgregory.net/rapid"

	"github.com/cairn-io/cairn/internal/storage"
)

// TestEntryCacheMatchesTheLog: whatever a leader appends, overwrites, trims or loses to a
// snapshot, Entries answers exactly as it would from the files alone.
func TestEntryCacheMatchesTheLog(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fs := storage.NewMemFS()
		ls, err := Open(storage.Options{FS: fs, Dir: "g", SegmentBytes: 4096})
		if err != nil {
			t.Fatal(err)
		}
		defer ls.Close()
		term := uint64(1)
		for step := rapid.IntRange(1, 40).Draw(t, "steps"); step > 0; step-- {
			last, _ := ls.LastIndex()
			first, _ := ls.FirstIndex()
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0, 1, 2: // append, maybe over a suffix
				lo := rapid.Uint64Range(max(first, 1), last+1).Draw(t, "at")
				if rapid.Bool().Draw(t, "newTerm") {
					term++
				}
				var ents []*pb.Entry
				for i := uint64(0); i < uint64(rapid.IntRange(1, 5).Draw(t, "n")); i++ {
					ents = append(ents, entryFor(lo+i, term))
				}
				if _, err := ls.appendEntries(ents, rapid.IntRange(0, 3).Draw(t, "leader") > 0); err != nil {
					t.Fatal(err)
				}
			case 3:
				ls.cache.trimBelow(rapid.Uint64Range(0, last+2).Draw(t, "trim"))
			case 4:
				if err := ls.Flush(); err != nil {
					t.Fatal(err)
				}
			case 5: // what the cache answers equals the files' answer
				if last < first {
					continue
				}
				lo := rapid.Uint64Range(first, last).Draw(t, "lo")
				hi := rapid.Uint64Range(lo+1, last+1).Draw(t, "hi")
				maxSize := rapid.SampledFrom([]uint64{0, 100, 1 << 10, math.MaxUint64}).Draw(t, "max")
				got, err := ls.Entries(lo, hi, maxSize)
				if err != nil {
					t.Fatal(err)
				}
				want, err := ls.entriesFromLog(lo, hi, maxSize)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) {
					t.Fatalf("Entries(%d, %d, %d): %d entries from the cache, %d from the files", lo, hi, maxSize, len(got), len(want))
				}
				for i := range got {
					if got[i].GetIndex() != want[i].GetIndex() || got[i].GetTerm() != want[i].GetTerm() ||
						got[i].GetType() != want[i].GetType() || !bytes.Equal(normalized(got[i]), normalized(want[i])) {
						t.Fatalf("entry %d differs: cache %v, files %v", got[i].GetIndex(), got[i], want[i])
					}
				}
			}
		}
	})
}

// TestEntryCacheCountsTheFrameAnEntryShares: entries whose Data are small slices of one
// large request frame are counted by what they keep alive, so the cache drops them instead
// of holding many frames while it counts only their batches.
func TestEntryCacheCountsTheFrameAnEntryShares(t *testing.T) {
	var c entryCache
	for i := range 8 {
		frame := make([]byte, maxCacheBytes/2)
		c.add([]*pb.Entry{{Index: new(uint64(i + 1)), Term: new(uint64(1)), Data: frame[:100]}})
	}
	if c.bytes > maxCacheBytes || len(c.ents) > 2 {
		t.Fatalf("the cache holds %d entries counted as %d bytes, each keeping a %d-byte frame alive",
			len(c.ents), c.bytes, maxCacheBytes/2)
	}
	if len(c.ents) == 0 || c.ents[len(c.ents)-1].GetIndex() != 8 {
		t.Fatal("the cache dropped the newest entry")
	}
}
