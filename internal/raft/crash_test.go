package raft

import (
	"math"
	"math/rand/v2"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/storage"
)

func hardState(term, vote, commit uint64) *pb.HardState {
	return &pb.HardState{Term: new(term), Vote: new(vote), Commit: new(commit)}
}

func appendRange(t *testing.T, ls *LogStorage, lo, hi, term uint64) {
	t.Helper()
	var ents []*pb.Entry
	for i := lo; i <= hi; i++ {
		ents = append(ents, entryFor(i, term))
	}
	if err := ls.Append(ents); err != nil {
		t.Fatal(err)
	}
}

// Power loss after a partial flush: the HardState and every flushed entry survive, the
// unflushed tail is gone, and the group can go on from there.
func TestCrashKeepsHardStateAndFlushedEntries(t *testing.T) {
	fs := storage.NewMemFS()
	opts := storage.Options{FS: fs, Dir: "p/g1", SegmentBytes: 1024}
	ls, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.SetConfState(0, &pb.ConfState{Voters: []uint64{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	appendRange(t, ls, 1, 20, 2)
	if ls.WrittenIndex() != 20 || ls.FlushedIndex() != 0 {
		t.Fatalf("written %d flushed %d before flush", ls.WrittenIndex(), ls.FlushedIndex())
	}
	if err := ls.Flush(); err != nil {
		t.Fatal(err)
	}
	if ls.FlushedIndex() != 20 {
		t.Fatalf("flushed %d after flush", ls.FlushedIndex())
	}
	if err := ls.SetHardState(hardState(2, 1, 18)); err != nil {
		t.Fatal(err)
	}
	before, err := ls.Log().Entries(1, 21, math.MaxUint64)
	if err != nil {
		t.Fatal(err)
	}
	appendRange(t, ls, 21, 30, 3) // written, never flushed
	if ls.WrittenIndex() != 30 || ls.FlushedIndex() != 20 {
		t.Fatalf("written %d flushed %d", ls.WrittenIndex(), ls.FlushedIndex())
	}
	fs.Crash()

	ls, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	hs, cs, err := ls.InitialState()
	if err != nil || hs.GetTerm() != 2 || hs.GetVote() != 1 || hs.GetCommit() != 18 {
		t.Fatalf("hard state after crash: %v, %v", hs, err)
	}
	if len(cs.GetVoters()) != 3 {
		t.Fatalf("conf state after crash: %v", cs)
	}
	if last, _ := ls.LastIndex(); last != 20 {
		t.Fatalf("last index after crash %d, want 20", last)
	}
	after, err := ls.Log().Entries(1, 21, math.MaxUint64)
	if err != nil {
		t.Fatal(err)
	}
	for i := range before {
		b, a := before[i], after[i]
		if a.Index != b.Index || a.Term != b.Term || a.BaseOffset != b.BaseOffset || string(a.Data) != string(b.Data) {
			t.Fatalf("entry %d changed across the crash", b.Index)
		}
	}
	// The group goes on: a new leader's entries (term 3) take the offsets after index 20.
	appendRange(t, ls, 21, 22, 3)
	if term, _ := ls.Term(22); term != 3 {
		t.Fatalf("term of 22: %d", term)
	}
}

// A HardState that commits beyond what survived (its entries were never flushed) refuses
// to open rather than letting raft panic.
func TestOpenRefusesCommitBeyondLog(t *testing.T) {
	fs := storage.NewMemFS()
	opts := storage.Options{FS: fs, Dir: "g"}
	ls, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	appendRange(t, ls, 1, 5, 1)
	if err := ls.SetHardState(hardState(1, 1, 5)); err != nil { // wrong order: before Flush
		t.Fatal(err)
	}
	fs.Crash()
	if _, err := Open(opts); err == nil {
		t.Fatal("opened with commit 5 over an empty log")
	}
}

// A crash at any point of ApplySnapshot leaves either the old log and state, or the
// snapshot fully installed once Open has run (it finishes an interrupted reset).
func TestApplySnapshotCrashAtomic(t *testing.T) {
	snap := &pb.Snapshot{
		Data: EncodeSnapshotData(SnapshotData{NextOffset: 500}),
		Metadata: &pb.SnapshotMetadata{Index: new(uint64(40)), Term: new(uint64(6)),
			ConfState: &pb.ConfState{Voters: []uint64{1, 2, 3}}},
	}
	for k := 0; ; k++ {
		mem := storage.NewMemFS()
		cfs := &crashFS{MemFS: mem, left: math.MaxInt, rng: rand.New(rand.NewPCG(uint64(k), 1))}
		opts := storage.Options{FS: cfs, Dir: "g", SegmentBytes: 1024}
		ls, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		appendRange(t, ls, 1, 10, 1)
		if err := ls.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := ls.SetHardState(hardState(1, 1, 3)); err != nil {
			t.Fatal(err)
		}
		cfs.left = k
		aerr := ls.ApplySnapshot(snap)
		if !cfs.crashed {
			mem.Crash()
		}
		ls2, err := Open(storage.Options{FS: mem, Dir: "g", SegmentBytes: 1024})
		if err != nil {
			t.Fatalf("crash at op %d: reopen: %v", k, err)
		}
		hs, cs, _ := ls2.InitialState()
		first, _ := ls2.FirstIndex()
		last, _ := ls2.LastIndex()
		switch {
		case first == 1 && last == 10 && hs.GetCommit() == 3:
			if aerr == nil {
				t.Fatalf("crash at op %d: ApplySnapshot succeeded but the snapshot is gone", k)
			}
		case first == 41 && last == 40 && hs.GetCommit() == 40 && hs.GetTerm() == 6 && len(cs.GetVoters()) == 3:
			if ls2.Log().LogEndOffset() != 500 {
				t.Fatalf("crash at op %d: next offset %d, want 500", k, ls2.Log().LogEndOffset())
			}
			if term, _ := ls2.Term(40); term != 6 {
				t.Fatalf("crash at op %d: term of 40 = %d", k, term)
			}
		default:
			t.Fatalf("crash at op %d: neither old nor installed: first %d last %d hard state %v", k, first, last, hs)
		}
		ls2.Close()
		if aerr == nil {
			return
		}
	}
}

// A commit index is persisted lazily, except one that covers a configuration change not
// yet applied: a power loss before the change is applied must not forget that it is
// committed (a restarted raft checks the entries up to its commit index for pending
// changes before it campaigns). Other commits stay in memory: no state write per flush.
func TestCommitCoveringConfChangeSurvivesCrash(t *testing.T) {
	fs := storage.NewMemFS()
	opts := storage.Options{FS: fs, Dir: "g", SegmentBytes: 1024}
	ls, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.SetConfState(0, &pb.ConfState{Voters: []uint64{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	ents := []*pb.Entry{dataEntry(1, 2), dataEntry(2, 2), dataEntry(3, 2),
		{Index: new(uint64(4)), Term: new(uint64(2)), Type: pb.EntryConfChangeV2.Enum(), Data: []byte("cc")},
		dataEntry(5, 2), dataEntry(6, 2)}
	if err := ls.Append(ents); err != nil {
		t.Fatal(err)
	}
	if err := ls.Flush(); err != nil {
		t.Fatal(err)
	}
	reopen := func() {
		t.Helper()
		fs.Crash()
		if ls, err = Open(opts); err != nil {
			t.Fatal(err)
		}
	}
	commitAfterCrash := func(commit uint64) uint64 { // in the persisted term and vote
		t.Helper()
		term, vote, _ := ls.HardState()
		if err := ls.SetHardState(hardState(term, vote, commit)); err != nil {
			t.Fatal(err)
		}
		reopen()
		_, _, c := ls.HardState()
		return c
	}
	if err := ls.SetHardState(hardState(2, 1, 0)); err != nil {
		t.Fatal(err)
	}
	if c := commitAfterCrash(3); c != 0 {
		t.Fatalf("a commit over data entries only was persisted: %d", c)
	}
	// The log Open finds holds entries above the persisted commit it has not read: any
	// commit over them may cover a change, and is persisted.
	if c := commitAfterCrash(2); c != 2 {
		t.Fatalf("a commit over the tail found on open was lost: %d", c)
	}
	if c := commitAfterCrash(5); c != 5 {
		t.Fatalf("a commit covering the change at 4 was lost: %d", c)
	}
	// From here the tail is known to hold no change: appended changes alone cost a write.
	if c := commitAfterCrash(6); c != 6 {
		t.Fatalf("a commit over the rest of the tail found on open was lost: %d", c)
	}
	if err := ls.Append([]*pb.Entry{dataEntry(7, 3), dataEntry(8, 3),
		{Index: new(uint64(9)), Term: new(uint64(3)), Type: pb.EntryConfChange.Enum(), Data: []byte("cc")}}); err != nil {
		t.Fatal(err)
	}
	if err := ls.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := ls.SetHardState(hardState(3, 1, 6)); err != nil { // a new term: persisted
		t.Fatal(err)
	}
	if err := ls.SetHardState(hardState(3, 1, 8)); err != nil {
		t.Fatal(err)
	}
	if _, _, c := ls.HardState(); c != 8 {
		t.Fatalf("commit in memory %d, want 8", c)
	}
	if c := commitAfterCrash(9); c != 9 {
		t.Fatalf("a commit covering the appended change at 9 was lost: %d", c)
	}
	// A change truncated by a new leader's entries no longer counts.
	if err := ls.Append([]*pb.Entry{dataEntry(10, 3),
		{Index: new(uint64(11)), Term: new(uint64(3)), Type: pb.EntryConfChange.Enum(), Data: []byte("cc")}}); err != nil {
		t.Fatal(err)
	}
	if err := ls.Append([]*pb.Entry{dataEntry(11, 4), dataEntry(12, 4)}); err != nil {
		t.Fatal(err)
	}
	if err := ls.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := ls.SetHardState(hardState(4, 2, 9)); err != nil {
		t.Fatal(err)
	}
	if c := commitAfterCrash(12); c != 9 {
		t.Fatalf("commit %d after the crash, want the lazily kept 12 lost (9)", c)
	}
	ls.Close()
}

func dataEntry(index, term uint64) *pb.Entry {
	return &pb.Entry{Index: new(index), Term: new(term), Data: kafkatest.Plain(1, int64(index)).Bytes()}
}
