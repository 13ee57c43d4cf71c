package raft

import (
	"bytes"
	"errors"
	"os"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/storage"
)

// Elections write only the vote file, in place: the state file stays as the last
// configuration left it, the file keeps its size, and a reopen reads the newest term and
// vote, over the state file's older ones.
func TestVoteFileHoldsTheHardState(t *testing.T) {
	fs := storage.NewMemFS()
	ls, err := Open(storage.Options{FS: fs, Dir: "g"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.SetConfState(0, &pb.ConfState{Voters: []uint64{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	stateBefore := readBytes(t, fs, "g/"+StateFileName)
	for term := uint64(2); term <= 9; term++ {
		if err := ls.SetHardState(hardState(term, term%3+1, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if got := readBytes(t, fs, "g/"+StateFileName); !bytes.Equal(got, stateBefore) {
		t.Fatal("an election rewrote the state file")
	}
	if n := len(readBytes(t, fs, "g/"+VoteFileName)); n != voteSlot+voteRecLen {
		t.Fatalf("vote file of %d bytes, want %d", n, voteSlot+voteRecLen)
	}
	ls.Close()
	fs.Crash() // only what was synced
	ls, err = Open(storage.Options{FS: fs, Dir: "g"})
	if err != nil {
		t.Fatal(err)
	}
	if term, vote, _ := ls.HardState(); term != 9 || vote != 1 {
		t.Fatalf("after a crash: term %d vote %d, want 9 and 1", term, vote)
	}
	// A later configuration carries the HardState of its moment into the state file, and
	// the next election goes on in the vote file from the sequence it had reached.
	if err := ls.SetConfState(0, &pb.ConfState{Voters: []uint64{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if err := ls.SetHardState(hardState(10, 0, 0)); err != nil {
		t.Fatal(err)
	}
	ls.Close()
	ls, err = Open(storage.Options{FS: fs, Dir: "g"})
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	if term, vote, _ := ls.HardState(); term != 10 || vote != 0 {
		t.Fatalf("term %d vote %d, want 10 and none", term, vote)
	}
}

// A record torn by a crash leaves the one before it; a file with no whole record but
// zeros is none; any other damage is ErrCorruptState, never a silent fallback to an older
// vote.
func TestVoteFileTornAndCorrupt(t *testing.T) {
	older := encodeVote(voteRec{seq: 6, term: 4, vote: 2, commit: 10})
	newer := encodeVote(voteRec{seq: 7, term: 5, vote: 3, commit: 11})
	file := make([]byte, voteSlot+voteRecLen)
	copy(file, older)
	copy(file[voteSlot:], newer)
	if r, found, err := decodeVoteFile(file); err != nil || !found || r.term != 5 || r.vote != 3 {
		t.Fatalf("both whole: %+v %v %v", r, found, err)
	}
	for n := 0; n < voteRecLen; n++ { // the newer record torn at every length
		b := bytes.Clone(file)
		clear(b[voteSlot+n : voteSlot+voteRecLen])
		if r, found, err := decodeVoteFile(b); err != nil || !found || r.term != 4 || r.vote != 2 {
			t.Fatalf("newer torn at %d: %+v %v %v", n, r, found, err)
		}
	}
	for i := range voteRecLen { // any bit flip in the newer record
		b := bytes.Clone(file)
		b[voteSlot+i] ^= 0x08
		if r, _, err := decodeVoteFile(b); err != nil || r.term != 4 {
			t.Fatalf("flip at %d: %+v %v", i, r, err)
		}
	}
	if _, found, err := decodeVoteFile(make([]byte, voteSlot+voteRecLen)); err != nil || found {
		t.Fatalf("zeros: found %v err %v", found, err)
	}
	b := bytes.Clone(file)
	b[3] ^= 1
	b[voteSlot+3] ^= 1
	if _, _, err := decodeVoteFile(b); !errors.Is(err, ErrCorruptState) {
		t.Fatalf("both damaged: %v", err)
	}
	// Through Open.
	fs := storage.NewMemFS()
	if err := fs.MkdirAll("g", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.OpenFile("g/"+VoteFileName, os.O_RDWR|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.WriteAt(b, 0)
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(storage.Options{FS: fs, Dir: "g"}); !errors.Is(err, ErrCorruptState) {
		t.Fatalf("open with a damaged vote file: %v", err)
	}
}

func FuzzDecodeVoteFile(f *testing.F) {
	file := make([]byte, voteSlot+voteRecLen)
	copy(file, encodeVote(voteRec{seq: 1, term: 2, vote: 3, commit: 4}))
	copy(file[voteSlot:], encodeVote(voteRec{seq: 2, term: 3, vote: 1, commit: 5}))
	f.Add(file)
	f.Add(file[:voteRecLen])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, found, err := decodeVoteFile(b)
		if err != nil && found {
			t.Fatal("found with an error")
		}
		if found {
			// What it found is a whole record at one of the two places.
			enc := encodeVote(r)
			if !bytes.HasPrefix(b, enc) && (len(b) < voteSlot || !bytes.HasPrefix(b[voteSlot:], enc)) {
				t.Fatalf("found %+v, which is in neither place", r)
			}
		}
	})
}

func readBytes(t *testing.T, fs storage.FS, name string) []byte {
	t.Helper()
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, _ := f.Size()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}
