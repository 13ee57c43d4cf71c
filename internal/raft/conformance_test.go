package raft

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"pgregory.net/rapid"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/recordbatch"
	"github.com/cairn-io/cairn/internal/storage"
)

// entryFor builds the entry at (index, term). Its content is a function of both, as Log
// Matching promises for a real log (same index and term, same entry).
func entryFor(index, term uint64) *pb.Entry {
	e := &pb.Entry{Index: new(index), Term: new(term)}
	switch (index*7 + term) % 5 {
	case 0:
		// empty normal entry (a new leader's)
	case 1:
		e.Type = pb.EntryConfChange.Enum()
		e.Data = []byte(fmt.Sprintf("cc-%d-%d", index, term))
	case 2:
		e.Type = pb.EntryConfChangeV2.Enum()
	default:
		n := 1 + int((index*3+term)%4)
		e.Data = kafkatest.Plain(n, int64(index*1000+term)).Bytes()
	}
	return e
}

func isData(e *pb.Entry) bool { return e.GetType() == pb.EntryNormal && len(e.GetData()) > 0 }

// normalized blanks the two batch header fields storage sets (baseOffset and
// partitionLeaderEpoch), which raft's MemoryStorage leaves as proposed.
func normalized(e *pb.Entry) []byte {
	d := bytes.Clone(e.GetData())
	if isData(e) && len(d) >= recordbatch.LeaderEpochPos+4 {
		recordbatch.SetBaseOffset(d, 0)
		recordbatch.SetLeaderEpoch(d, 0)
	}
	return d
}

// reopenedCommit is the commit index a reopened LogStorage persisted: at least durable
// (what had to be persisted), at most the last one given.
func reopenedCommit(t *rapid.T, ls *LogStorage, durable, last uint64) uint64 {
	_, _, c := ls.HardState()
	if c < durable || c > last {
		t.Fatalf("reopened with commit %d, want %d to %d", c, durable, last)
	}
	return c
}

func sameErr(a, b error) bool {
	return (a == nil) == (b == nil) && (a == nil || errors.Is(a, b) || errors.Is(b, a))
}

// TestConformsToMemoryStorage applies the same random appends (with overlaps and
// conflicts), hard states, snapshot installs and reopens to raft.MemoryStorage and to
// LogStorage, and checks that every raft.Storage answer agrees, errors included.
func TestConformsToMemoryStorage(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ms := etcdraft.NewMemoryStorage()
		fs := storage.NewMemFS()
		opts := storage.Options{FS: fs, Dir: "g", SegmentBytes: 2048}
		ls, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if ls != nil {
				ls.Close()
			}
		}()
		var hsTerm, hsVote, hsCommit uint64
		// durableCommit is the least commit index a reopen must find: SetHardState writes
		// for a new term or vote, and for a commit that covers a configuration change the
		// log holds above the persisted one; any other commit may be lost.
		var durableCommit uint64
		snapOffset := int64(0) // Kafka offset of the entry right after MemoryStorage's snapshot

		check := func() {
			fi, _ := ms.FirstIndex()
			li, _ := ms.LastIndex()
			if got, _ := ls.FirstIndex(); got != fi {
				t.Fatalf("FirstIndex %d, want %d", got, fi)
			}
			if got, _ := ls.LastIndex(); got != li {
				t.Fatalf("LastIndex %d, want %d", got, li)
			}
			for i := uint64(0); i <= li+2; i++ {
				wt, werr := ms.Term(i)
				gt, gerr := ls.Term(i)
				if wt != gt || !sameErr(werr, gerr) {
					t.Fatalf("Term(%d) = %d, %v; want %d, %v", i, gt, gerr, wt, werr)
				}
			}
			lo := rapid.Uint64Range(fi-1, li+1).Draw(t, "lo")
			hi := rapid.Uint64Range(lo, li+1).Draw(t, "hi")
			maxSize := rapid.SampledFrom([]uint64{0, 50, 200, 1000, math.MaxUint64}).Draw(t, "maxSize")
			if lo < 1 {
				lo = 1
			}
			if hi < lo {
				hi = lo
			}
			want, werr := ms.Entries(lo, hi, maxSize)
			got, gerr := ls.Entries(lo, hi, maxSize)
			if !sameErr(werr, gerr) || len(got) != len(want) {
				t.Fatalf("Entries(%d, %d, %d): %d entries, %v; want %d, %v", lo, hi, maxSize, len(got), gerr, len(want), werr)
			}
			for i := range want {
				w, g := want[i], got[i]
				if g.GetIndex() != w.GetIndex() || g.GetTerm() != w.GetTerm() || g.GetType() != w.GetType() ||
					!bytes.Equal(normalized(g), normalized(w)) {
					t.Fatalf("Entries(%d, %d): entry %d = %v, want %v", lo, hi, i, g, w)
				}
			}
			if _, err := ls.Entries(fi, li+2, math.MaxUint64); !errors.Is(err, etcdraft.ErrUnavailable) {
				t.Fatalf("Entries beyond the last index: %v", err)
			}
			// Kafka offsets: dense over data entries from the snapshot's offset, and
			// written into each stored batch with the term as leader epoch.
			if li >= fi {
				ents, err := ls.Log().Entries(fi, li+1, math.MaxUint64)
				if err != nil {
					t.Fatal(err)
				}
				next := snapOffset
				for _, e := range ents {
					if e.BaseOffset != next {
						t.Fatalf("index %d: base offset %d, want %d", e.Index, e.BaseOffset, next)
					}
					if e.Type == storage.EntryData {
						if h, _ := recordbatch.ParseHeader(e.Data); h.BaseOffset != next || h.LeaderEpoch != int32(e.Term) {
							t.Fatalf("index %d: batch header not set", e.Index)
						}
					}
					next += int64(e.Records)
				}
			}
			hs, _, err := ls.InitialState()
			if err != nil || hs.GetTerm() != hsTerm || hs.GetVote() != hsVote || hs.GetCommit() != max(hsCommit, fi-1) {
				t.Fatalf("InitialState %v, %v; want term %d vote %d commit %d", hs, err, hsTerm, hsVote, hsCommit)
			}
		}

		steps := rapid.IntRange(1, 30).Draw(t, "steps")
		for step := 0; step < steps; step++ {
			fi, _ := ms.FirstIndex()
			li, _ := ms.LastIndex()
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2, 3, 4: // append, possibly over an uncommitted suffix
				lo := rapid.Uint64Range(max(fi-min(fi-1, 1), hsCommit+1), li+1).Draw(t, "at")
				n := rapid.IntRange(1, 6).Draw(t, "n")
				prev, _ := ms.Term(max(lo, fi) - 1)
				term := prev + rapid.Uint64Range(0, 2).Draw(t, "bump")
				if term == 0 {
					term = 1
				}
				var ents []*pb.Entry
				for i := 0; i < n; i++ {
					if rapid.IntRange(0, 4).Draw(t, "termStep") == 0 {
						term++
					}
					ents = append(ents, entryFor(lo+uint64(i), term))
				}
				if err := ms.Append(ents); err != nil {
					t.Fatal(err)
				}
				if err := ls.Append(ents); err != nil {
					t.Fatalf("append at %d: %v", lo, err)
				}
			case 5: // hard state
				// Hard states as raft produces them: the term never goes down, a vote is
				// cast at most once per term and never in term 0.
				oldTerm, oldVote := hsTerm, hsVote
				newTerm := max(hsTerm, rapid.Uint64Range(0, 10).Draw(t, "term"))
				if vote := rapid.Uint64Range(0, 3).Draw(t, "vote"); newTerm > hsTerm || hsVote == 0 {
					hsVote = vote
				}
				if hsTerm = newTerm; hsTerm == 0 {
					hsVote = 0
				}
				// Raft never lowers its commit index (and never hands storage an all-zero
				// HardState, which LogStorage ignores as raft does).
				hsCommit = rapid.Uint64Range(hsCommit, max(hsCommit, li)).Draw(t, "commit")
				hs := &pb.HardState{Term: new(hsTerm), Vote: new(hsVote), Commit: new(hsCommit)}
				ms.SetHardState(hs)
				if err := ls.SetHardState(hs); err != nil {
					t.Fatal(err)
				}
				if hsTerm != oldTerm || hsVote != oldVote {
					durableCommit = hsCommit
				}
				if hsCommit > durableCommit {
					ents, _ := ms.Entries(max(durableCommit+1, fi), hsCommit+1, math.MaxUint64)
					for _, e := range ents {
						if t := e.GetType(); t == pb.EntryConfChange || t == pb.EntryConfChangeV2 {
							durableCommit = hsCommit
						}
					}
				}
			case 6: // install a snapshot
				idx := rapid.Uint64Range(hsCommit+1, li+3).Draw(t, "snapIndex")
				lt, _ := ms.Term(li)
				term := lt + rapid.Uint64Range(0, 2).Draw(t, "snapTerm")
				off := rapid.Int64Range(0, 1000).Draw(t, "snapOffset")
				snap := &pb.Snapshot{
					Data: EncodeSnapshotData(SnapshotData{NextOffset: off}),
					Metadata: &pb.SnapshotMetadata{Index: new(idx), Term: new(term),
						ConfState: &pb.ConfState{Voters: []uint64{1, 2, 3}}},
				}
				werr := ms.ApplySnapshot(snap)
				gerr := ls.ApplySnapshot(snap)
				if !sameErr(werr, gerr) {
					t.Fatalf("ApplySnapshot(%d): %v, want %v", idx, gerr, werr)
				}
				if werr == nil {
					snapOffset = off
					hsCommit, hsTerm = max(hsCommit, idx), max(hsTerm, term)
					durableCommit = hsCommit
					ms.SetHardState(&pb.HardState{Term: new(hsTerm), Vote: new(hsVote), Commit: new(hsCommit)})
					got, err := ls.Snapshot()
					if err != nil || got.GetMetadata().GetIndex() != idx || got.GetMetadata().GetTerm() != term {
						t.Fatalf("Snapshot after install: %v, %v", got, err)
					}
					if d, err := DecodeSnapshotData(got.GetData()); err != nil || d.NextOffset != off {
						t.Fatalf("snapshot data %v, %v; want offset %d", d, err, off)
					}
				}
			case 7: // clean reopen
				if err := ls.Close(); err != nil {
					t.Fatal(err)
				}
				if ls, err = Open(opts); err != nil {
					t.Fatal(err)
				}
				hsCommit = reopenedCommit(t, ls, durableCommit, hsCommit)
			case 8: // flush, then power loss, then reopen: nothing raft saw is lost
				if err := ls.Flush(); err != nil {
					t.Fatal(err)
				}
				fs.Crash()
				if ls, err = Open(opts); err != nil {
					t.Fatal(err)
				}
				hsCommit = reopenedCommit(t, ls, durableCommit, hsCommit)
			case 9:
				check()
			}
		}
		check()
	})
}
