package raft

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/cairn-io/cairn/internal/storage"
)

// # The vote file
//
// The HardState (term, vote, commit) changes at every election on every voter, and raft
// sends nothing that depends on it before it is durable. Replacing the whole state file
// for it (a temporary file, an fsync, a rename and a directory fsync) cost a broker with
// tens of thousands of groups more than an election timeout when thousands of elections
// ran at once (after a broker stopped or restarted), and the elections never completed.
// So the HardState alone goes to a file of its own, raft.vote, overwritten in place: two
// records in two sectors, written alternately, each with a sequence number and a CRC32C,
// and made durable by one fdatasync of a file whose size no longer changes. A write torn
// by a crash leaves the other record, the HardState before it, which is all raft may
// assume of a write it was not told had finished. The state file (raft.state) is still
// written whole when the configuration, a snapshot or the join gate changes, with the
// HardState of the moment; opening takes the newer of the two (the higher term; at the
// same term the one that holds a vote, since a vote never changes within a term) and the
// higher commit. An earlier release reads raft.state alone: a downgrade after elections
// ran here could forget a vote (docs/operations.md, Downgrades).
//
// Each record is, big-endian: magic "CAIRNVOT" | sequence u64 | term u64 | vote u64 |
// commit u64 | CRC32C u32 of the bytes before it; record i (sequence modulo 2) starts at
// byte i*voteSlot.

// VoteFileName is the name of the HardState file beside StateFileName.
const VoteFileName = "raft.vote"

const (
	voteMagic  = "CAIRNVOT"
	voteSlot   = 512
	voteRecLen = len(voteMagic) + 4*8 + 4
)

// voteRec is one record of the vote file.
type voteRec struct {
	seq, term, vote, commit uint64
}

func encodeVote(r voteRec) []byte {
	b := make([]byte, 0, voteRecLen)
	b = append(b, voteMagic...)
	for _, v := range []uint64{r.seq, r.term, r.vote, r.commit} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeVoteRec parses one record; ok is false for anything but a whole, matching one.
func decodeVoteRec(b []byte) (r voteRec, ok bool) {
	if len(b) < voteRecLen || string(b[:len(voteMagic)]) != voteMagic {
		return r, false
	}
	if crc32.Checksum(b[:voteRecLen-4], castagnoli) != binary.BigEndian.Uint32(b[voteRecLen-4:]) {
		return r, false
	}
	d := decoder{b: b[len(voteMagic) : voteRecLen-4]}
	r.seq, r.term, r.vote, r.commit = d.u64(), d.u64(), d.u64(), d.u64()
	return r, !d.bad
}

// decodeVoteFile returns the newest whole record of a vote file's bytes. A file with no
// whole record is found false if it holds nothing but zeros (created, and its first
// write lost with a crash before it was durable), and ErrCorruptState otherwise: a
// record that was durable and is not readable any more may hold a vote raft relied on.
func decodeVoteFile(b []byte) (r voteRec, found bool, err error) {
	for i := 0; i < 2; i++ {
		if off := i * voteSlot; off < len(b) {
			if c, ok := decodeVoteRec(b[off:]); ok && (!found || c.seq > r.seq) {
				r, found = c, true
			}
		}
	}
	if found {
		return r, true, nil
	}
	for _, c := range b {
		if c != 0 {
			return voteRec{}, false, fmt.Errorf("%w: no whole record in the vote file", ErrCorruptState)
		}
	}
	return voteRec{}, false, nil
}

// readVoteFile reads the vote file at name; a missing one is found false.
func readVoteFile(fs storage.FS, name string) (voteRec, bool, error) {
	b, _, found, err := readPrefix(fs, name, 2*voteSlot)
	if err != nil || !found {
		return voteRec{}, false, err
	}
	r, found, err := decodeVoteFile(b)
	if err != nil {
		return r, false, fmt.Errorf("%s: %w", name, err)
	}
	return r, found, nil
}

// mergeVote folds the vote file's HardState into the state file's: the newer term's
// (at the same term, the one with a vote), and the higher commit.
func mergeVote(st *raftState, r voteRec) {
	if r.term > st.Term || (r.term == st.Term && st.Vote == 0) {
		st.Term, st.Vote = r.term, r.vote
	}
	st.Commit = max(st.Commit, r.commit)
}

// voteFile writes the vote file. Its writer holds LogStorage.writeMu.
type voteFile struct {
	fs   storage.FS
	path string
	f    storage.File // open from the first write on
	seq  uint64       // the newest record's sequence
}

// write makes term, vote and commit durable as the newest record.
func (v *voteFile) write(term, vote, commit uint64) error {
	created := false
	if v.f == nil {
		f, err := v.fs.OpenFile(v.path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("raft: open %s: %w", v.path, err)
		}
		size, err := f.Size()
		if err != nil {
			f.Close()
			return err
		}
		v.f, created = f, size == 0
	}
	seq := v.seq + 1
	if _, err := v.f.WriteAt(encodeVote(voteRec{seq: seq, term: term, vote: vote, commit: commit}), int64(seq%2)*voteSlot); err != nil {
		return fmt.Errorf("raft: write %s: %w", v.path, err)
	}
	if err := v.f.Sync(); err != nil {
		return fmt.Errorf("raft: sync %s: %w", v.path, err)
	}
	if created {
		// The file's own entry in its directory, once.
		if err := v.fs.SyncDir(filepath.Dir(v.path)); err != nil {
			return err
		}
	}
	v.seq = seq
	return nil
}

func (v *voteFile) close() error {
	if v.f == nil {
		return nil
	}
	err := v.f.Close()
	v.f = nil
	return err
}
