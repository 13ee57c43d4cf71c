package raft

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/storage"
)

func sampleState() raftState {
	return raftState{
		Term: 7, Vote: 2, Commit: 41,
		Snap: snapPos{Index: 10, Term: 3, NextOffset: 99},
		Confs: []confAt{
			{Index: 10, CS: &pb.ConfState{Voters: []uint64{1, 2, 3}, AutoLeave: new(false)}},
			{Index: 30, CS: &pb.ConfState{Voters: []uint64{1, 2, 4}, Learners: []uint64{5},
				VotersOutgoing: []uint64{1, 2, 3}, LearnersNext: []uint64{3}, AutoLeave: new(true)}},
		},
	}
}

func gatedState(floor uint64) raftState {
	s := sampleState()
	s.Join = joinGate{Gated: true, Floor: floor}
	return s
}

func TestStateRoundTrip(t *testing.T) {
	for _, s := range []raftState{{}, sampleState(), gatedState(0), gatedState(57), {Join: joinGate{Gated: true}}} {
		b := encodeState(&s)
		got, err := decodeState(b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(encodeState(&got), b) {
			t.Fatalf("round trip changed the encoding")
		}
		if got.Term != s.Term || got.Vote != s.Vote || got.Commit != s.Commit || got.Snap != s.Snap || len(got.Confs) != len(s.Confs) || got.Join != s.Join {
			t.Fatalf("got %+v, want %+v", got, s)
		}
		for i := range got.Confs {
			if err := got.Confs[i].CS.Equivalent(s.Confs[i].CS); err != nil || got.Confs[i].Index != s.Confs[i].Index {
				t.Fatalf("conf %d: %v", i, err)
			}
		}
	}
}

// v1State is a state file as the release before the join gate wrote it (sampleState's
// first configuration only): it must read as a replica that is not gated, and a state that
// is not gated must still be written exactly so, for that release to read it back.
const v1State = "434149524e5246540000000100000065000000000000000700000000000000020000000000000029000000000000000a0000000000000003000000000000006300000001000000000000000a0000000300000000000000010000000000000002000000000000000300000000000000000000000000657b7873"

func TestStateReadsVersion1(t *testing.T) {
	b, err := hex.DecodeString(v1State)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Join != (joinGate{}) || got.Term != 7 || got.Commit != 41 || len(got.Confs) != 1 || got.Confs[0].Index != 10 {
		t.Fatalf("version 1 file read as %+v", got)
	}
	if !bytes.Equal(encodeState(&got), b) {
		t.Fatalf("a state that is not gated is no longer written as version 1")
	}
	// A gated state is version 2: one field more, so an earlier release refuses it rather
	// than forget the gate.
	got.Join = joinGate{Gated: true, Floor: 12}
	g := encodeState(&got)
	if v := binary.BigEndian.Uint32(g[len(stateMagic):]); v != stateVersionGated || len(g) != len(b)+8 {
		t.Fatalf("gated state written as version %d, %d bytes", v, len(g))
	}
}

// The gate survives a reopen at each of its steps: set at creation, floor learned, lifted.
func TestJoinGatePersists(t *testing.T) {
	fs := storage.NewMemFS()
	opts := storage.Options{FS: fs, Dir: "g"}
	for _, j := range []joinGate{{Gated: true}, {Gated: true, Floor: 9}, {}} {
		ls, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := ls.setJoinGate(j); err != nil {
			t.Fatal(err)
		}
		fs.Crash() // the write is durable when setJoinGate returns
		if ls, err = Open(opts); err != nil {
			t.Fatal(err)
		}
		if gated, floor := ls.JoinGate(); gated != j.Gated || floor != j.Floor {
			t.Fatalf("after a crash: gated %v floor %d, want %+v", gated, floor, j)
		}
		ls.Close()
	}
}

func TestStateCorruptIsAnError(t *testing.T) {
	for _, s := range []raftState{sampleState(), gatedState(57)} {
		good := encodeState(&s)
		for n := 0; n < len(good); n++ { // every torn prefix
			if _, err := decodeState(good[:n]); !errors.Is(err, ErrCorruptState) {
				t.Fatalf("prefix of %d bytes: err %v", n, err)
			}
		}
		for i := range good { // every single bit flip
			b := bytes.Clone(good)
			b[i] ^= 0x10
			if _, err := decodeState(b); !errors.Is(err, ErrCorruptState) {
				t.Fatalf("flip at %d: err %v", i, err)
			}
		}
	}
	// Through the file: a torn state file fails Open instead of reading as empty.
	fs := storage.NewMemFS()
	ls, err := Open(storage.Options{FS: fs, Dir: "g"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.SetConfState(0, &pb.ConfState{Voters: []uint64{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	ls.Close()
	f, err := fs.OpenFile("g/"+StateFileName, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	size, _ := f.Size()
	f.Truncate(size - 3)
	f.Close()
	if _, err := Open(storage.Options{FS: fs, Dir: "g"}); !errors.Is(err, ErrCorruptState) {
		t.Fatalf("open with a torn state file: %v", err)
	}
}

// crashFS counts mutating operations and, at the chosen one, crashes the MemFS (keeping a
// random part of what was not synced) and fails that and every later operation.
type crashFS struct {
	*storage.MemFS
	left    int
	crashed bool
	rng     *rand.Rand
}

var errCrashed = errors.New("crashed")

func (c *crashFS) step() error {
	if c.crashed {
		return errCrashed
	}
	c.left--
	if c.left < 0 {
		c.crashed = true
		c.MemFS.CrashWithTornWrites(c.rng)
		return errCrashed
	}
	return nil
}

func (c *crashFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	if err := c.step(); err != nil {
		return nil, err
	}
	f, err := c.MemFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &crashFile{File: f, c: c}, nil
}
func (c *crashFS) Rename(a, b string) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.MemFS.Rename(a, b)
}
func (c *crashFS) SyncDir(name string) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.MemFS.SyncDir(name)
}
func (c *crashFS) Remove(name string) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.MemFS.Remove(name)
}

type crashFile struct {
	storage.File
	c *crashFS
}

func (f *crashFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.c.step(); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}
func (f *crashFile) Write(p []byte) (int, error) {
	if err := f.c.step(); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}
func (f *crashFile) Sync() error {
	if err := f.c.step(); err != nil {
		return err
	}
	return f.File.Sync()
}

// A crash at any point of a state write leaves the old or the new state, never a torn or
// missing file.
func TestStateWriteIsAtomicUnderCrash(t *testing.T) {
	oldSt := raftState{Term: 1, Vote: 1, Commit: 0}
	newSt := sampleState()
	for k := 0; ; k++ {
		mem := storage.NewMemFS()
		if err := mem.MkdirAll("g", 0o755); err != nil {
			t.Fatal(err)
		}
		mem.SyncDir("/")
		if err := writeState(mem, "g/"+StateFileName, &oldSt); err != nil {
			t.Fatal(err)
		}
		cfs := &crashFS{MemFS: mem, left: k, rng: rand.New(rand.NewPCG(uint64(k), 7))}
		werr := writeState(cfs, "g/"+StateFileName, &newSt)
		if !cfs.crashed {
			mem.Crash()
		}
		got, found, err := readState(mem, "g/"+StateFileName)
		if err != nil || !found {
			t.Fatalf("crash at op %d: found %v, err %v", k, found, err)
		}
		want := oldSt
		if got.Term == newSt.Term {
			want = newSt
		}
		if !bytes.Equal(encodeState(&got), encodeState(&want)) {
			t.Fatalf("crash at op %d: state is neither old nor new: %+v", k, got)
		}
		if werr == nil {
			if got.Term != newSt.Term {
				t.Fatalf("write returned success but the new state did not survive")
			}
			return
		}
	}
}

func FuzzDecodeRaftState(f *testing.F) {
	s := sampleState()
	f.Add(encodeState(&s))
	f.Add(encodeState(&raftState{}))
	g := gatedState(57)
	f.Add(encodeState(&g))
	f.Add(encodeState(&raftState{Join: joinGate{Gated: true}}))
	f.Add([]byte("CAIRNRFT"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeState(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptState) {
				t.Fatalf("error not ErrCorruptState: %v", err)
			}
			return
		}
		// Whatever decodes is canonical: it encodes back to the same bytes.
		if !bytes.Equal(encodeState(&st), b) {
			t.Fatalf("decoded state does not re-encode to its input")
		}
	})
}

func TestSnapshotDataRoundTrip(t *testing.T) {
	for _, off := range []int64{0, 1, 1 << 40} {
		d, err := DecodeSnapshotData(EncodeSnapshotData(SnapshotData{NextOffset: off}))
		if err != nil || d.NextOffset != off {
			t.Fatalf("offset %d: %v %v", off, d, err)
		}
	}
	b := EncodeSnapshotData(SnapshotData{NextOffset: 5})
	b[3] ^= 1
	if _, err := DecodeSnapshotData(b); !errors.Is(err, ErrBadSnapshotData) {
		t.Fatalf("corrupt data: %v", err)
	}
	if _, err := DecodeSnapshotData(nil); !errors.Is(err, ErrBadSnapshotData) {
		t.Fatalf("empty data: %v", err)
	}
}
