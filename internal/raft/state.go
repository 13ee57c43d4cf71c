package raft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/storage"
)

// StateFileName is the name of the persisted Raft state file in a group's log directory.
const StateFileName = "raft.state"

// ErrCorruptState reports a state file that is torn, fails its CRC32C or is malformed.
var ErrCorruptState = errors.New("raft: corrupt state file")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	stateMagic = "CAIRNRFT"
	// stateVersion is the layout of a replica that is not join-gated; stateVersionGated
	// adds the join floor (see joinGate). A file is written in the older layout whenever it
	// can be, so an earlier release still reads every state but a joiner's mid-catch-up.
	stateVersion      = 1
	stateVersionGated = 2
	// Upper bound on the file size, and so on what a decoder allocates.
	maxStateSize = 1 << 20
)

// snapPos is the position of the last installed snapshot: the log restarts at Index+1 with
// Kafka offset NextOffset. The zero value means none was ever installed.
type snapPos struct {
	Index, Term uint64
	NextOffset  int64
}

// confAt is a ConfState that took effect when the entry at Index was applied (Index 0: the
// bootstrap configuration).
type confAt struct {
	Index uint64
	CS    *pb.ConfState
}

// joinGate is a joining replica's gate (group.go: a replica created empty, with no
// bootstrap, that has not yet applied its log up to Floor). Floor 0 means not yet learned.
type joinGate struct {
	Gated bool
	Floor uint64
}

// raftState is the content of the state file.
type raftState struct {
	Term, Vote, Commit uint64
	Snap               snapPos
	Confs              []confAt // ascending Index; the last is the current configuration
	Join               joinGate
}

// clone returns a deep copy (ConfStates are shared with callers through InitialState and
// Snapshot, so they are never mutated in place).
func (s raftState) clone() raftState {
	s.Confs = slices.Clone(s.Confs)
	return s
}

// confAsOf returns the ConfState in force at index (the latest with Index <= index).
func (s *raftState) confAsOf(index uint64) (*pb.ConfState, bool) {
	for i := len(s.Confs) - 1; i >= 0; i-- {
		if s.Confs[i].Index <= index {
			return s.Confs[i].CS, true
		}
	}
	return nil, false
}

// prune drops ConfStates that no index at or above boundary needs: all but the latest one
// at or below boundary.
func (s *raftState) prune(boundary uint64) {
	keep := 0
	for i := range s.Confs {
		if s.Confs[i].Index <= boundary {
			keep = i
		}
	}
	s.Confs = s.Confs[keep:]
}

// encodeState lays the state out as (big-endian):
//
//	magic "CAIRNRFT" | version u32 (1 or 2) | body length u32 | body | CRC32C u32
//	body: term u64 | vote u64 | commit u64 |
//	      snapshot index u64 | snapshot term u64 | snapshot next offset i64 |
//	      conf count u32 | conf* | [version 2: join floor u64]
//	conf: index u64 | voters | learners | voters outgoing | learners next | auto leave u8
//	      where each id list is count u32 | id u64*
//
// Version 2 is exactly a join-gated replica's state (its floor 0 while unknown); version 1,
// which an earlier release wrote, is every other state. The CRC32C (Castagnoli) covers
// every byte before it.
func encodeState(s *raftState) []byte {
	b := make([]byte, 0, 128)
	b = append(b, stateMagic...)
	version := uint32(stateVersion)
	if s.Join.Gated {
		version = stateVersionGated
	}
	b = binary.BigEndian.AppendUint32(b, version)
	b = binary.BigEndian.AppendUint32(b, 0) // body length, patched below
	start := len(b)
	for _, v := range []uint64{s.Term, s.Vote, s.Commit, s.Snap.Index, s.Snap.Term, uint64(s.Snap.NextOffset)} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.Confs)))
	for _, c := range s.Confs {
		b = binary.BigEndian.AppendUint64(b, c.Index)
		for _, ids := range [][]uint64{c.CS.GetVoters(), c.CS.GetLearners(), c.CS.GetVotersOutgoing(), c.CS.GetLearnersNext()} {
			b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
			for _, id := range ids {
				b = binary.BigEndian.AppendUint64(b, id)
			}
		}
		if c.CS.GetAutoLeave() {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	if s.Join.Gated {
		b = binary.BigEndian.AppendUint64(b, s.Join.Floor)
	}
	binary.BigEndian.PutUint32(b[start-4:], uint32(len(b)-start))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decoder reads big-endian fields, remembering the first short read.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) u64() uint64 {
	if len(d.b) < 8 {
		d.bad = true
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) u32() uint32 {
	if len(d.b) < 4 {
		d.bad = true
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) u8() uint8 {
	if len(d.b) < 1 {
		d.bad = true
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) ids() []uint64 {
	n := d.u32()
	if d.bad || uint64(n)*8 > uint64(len(d.b)) {
		d.bad = true
		return nil
	}
	if n == 0 {
		return nil
	}
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = d.u64()
	}
	return ids
}

// decodeState parses a state file. Anything but exactly one well-formed encoding with a
// matching CRC32C is ErrCorruptState.
func decodeState(b []byte) (raftState, error) {
	var s raftState
	const head = len(stateMagic) + 8
	if len(b) < head+4 || len(b) > maxStateSize {
		return s, fmt.Errorf("%w: %d bytes", ErrCorruptState, len(b))
	}
	if string(b[:len(stateMagic)]) != stateMagic {
		return s, fmt.Errorf("%w: bad magic", ErrCorruptState)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return s, fmt.Errorf("%w: CRC mismatch", ErrCorruptState)
	}
	version := binary.BigEndian.Uint32(b[len(stateMagic):])
	if version != stateVersion && version != stateVersionGated {
		return s, fmt.Errorf("%w: version %d", ErrCorruptState, version)
	}
	if n := binary.BigEndian.Uint32(b[len(stateMagic)+4:]); uint64(n) != uint64(len(body)-head) {
		return s, fmt.Errorf("%w: body length %d, have %d", ErrCorruptState, n, len(body)-head)
	}
	d := decoder{b: body[head:]}
	s.Term, s.Vote, s.Commit = d.u64(), d.u64(), d.u64()
	s.Snap.Index, s.Snap.Term, s.Snap.NextOffset = d.u64(), d.u64(), int64(d.u64())
	n := d.u32()
	trailer := 0
	if version == stateVersionGated {
		trailer = 8
	}
	if d.bad || uint64(n)*(8+4*4+1)+uint64(trailer) > uint64(len(d.b)) {
		return raftState{}, fmt.Errorf("%w: conf count %d", ErrCorruptState, n)
	}
	for i := uint32(0); i < n; i++ {
		c := confAt{Index: d.u64(), CS: &pb.ConfState{}}
		c.CS.Voters, c.CS.Learners, c.CS.VotersOutgoing, c.CS.LearnersNext = d.ids(), d.ids(), d.ids(), d.ids()
		switch d.u8() {
		case 0:
			c.CS.AutoLeave = new(false)
		case 1:
			c.CS.AutoLeave = new(true)
		default:
			d.bad = true
		}
		if d.bad {
			break
		}
		if len(s.Confs) > 0 && c.Index <= s.Confs[len(s.Confs)-1].Index {
			return raftState{}, fmt.Errorf("%w: conf index %d after %d", ErrCorruptState, c.Index, s.Confs[len(s.Confs)-1].Index)
		}
		s.Confs = append(s.Confs, c)
	}
	if version == stateVersionGated && !d.bad {
		s.Join = joinGate{Gated: true, Floor: d.u64()}
	}
	if d.bad || len(d.b) != 0 {
		return raftState{}, fmt.Errorf("%w: malformed body", ErrCorruptState)
	}
	if s.Snap.NextOffset < 0 {
		return raftState{}, fmt.Errorf("%w: negative snapshot offset", ErrCorruptState)
	}
	return s, nil
}

// readState reads the state file; a missing file is the empty state (found false).
func readState(fs storage.FS, name string) (s raftState, found bool, err error) {
	b, size, found, err := readPrefix(fs, name, maxStateSize)
	if err != nil || !found {
		return s, false, err
	}
	if size > maxStateSize {
		return s, false, fmt.Errorf("%w: %s is %d bytes", ErrCorruptState, name, size)
	}
	s, err = decodeState(b)
	if err != nil {
		return s, false, fmt.Errorf("%s: %w", name, err)
	}
	return s, true, nil
}

// readPrefix reads the first min(size, limit) bytes of file name and returns them with
// the file's size; a missing file is found false.
func readPrefix(fs storage.FS, name string, limit int64) (b []byte, size int64, found bool, err error) {
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	defer f.Close()
	if size, err = f.Size(); err != nil {
		return nil, 0, false, err
	}
	b = make([]byte, min(size, limit))
	if n, err := f.ReadAt(b, 0); n != len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, 0, false, fmt.Errorf("raft: read %s: %w", name, err)
	}
	return b, size, true, nil
}

// writeState replaces the state file durably: temp file, fsync, rename, directory fsync.
// A crash at any point leaves either the old or the new file.
func writeState(fs storage.FS, name string, s *raftState) error {
	data := encodeState(s)
	if len(data) > maxStateSize {
		return fmt.Errorf("raft: state of %d bytes exceeds %d", len(data), maxStateSize)
	}
	if err := storage.WriteFileAtomic(fs, name, data); err != nil {
		return fmt.Errorf("raft: write %s: %w", name, err)
	}
	return nil
}
