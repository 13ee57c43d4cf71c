package raft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"path/filepath"
	"sync"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairn-io/cairn/internal/storage"
)

// ErrStateAhead is returned by Open when the persisted HardState commits an index the log
// does not hold: entries a flush had covered are gone, and raft could not start safely.
var ErrStateAhead = errors.New("raft: hard state commit index beyond the log")

// LogStorage is a raft.Storage over one group's storage.Log, plus the persisted HardState
// and ConfState (see the package documentation). The log is the only copy of the entries.
//
// Reads (the raft.Storage methods) may run concurrently with writes (Append, SetHardState,
// SetConfState, ApplySnapshot, Flush); writes are serialized internally. With
// AsyncStorageWrites, the host's append thread calls the writes in message order.
type LogStorage struct {
	log       *storage.Log
	fs        storage.FS
	statePath string
	vote      voteFile // the HardState between state file writes (votefile.go); under writeMu

	writeMu sync.Mutex // serializes Append, ApplySnapshot and state writes

	mu sync.Mutex // guards st
	st raftState

	cache entryCache

	// eagerCommit makes SetHardState persist every new commit index (see
	// PersistCommitEagerly).
	eagerCommit bool

	// Guarded by writeMu. A commit index is otherwise persisted lazily, but one that
	// covers a configuration change not yet applied is persisted at once: were it lost, a
	// restart would not know the change is committed, and raft (whose check for pending
	// changes looks only up to the commit index) could campaign in the configuration
	// before it. confPending are the indexes of the configuration changes appended and not
	// yet covered by the persisted commit (durableCommit), ascending; untrackedTo is the
	// last index of the log as Open found it when that lies above the persisted commit:
	// what it holds there is not tracked (finding out would mean reading it), so every
	// commit advance persists until the persisted commit reaches it.
	confPending   []uint64
	durableCommit uint64
	untrackedTo   uint64
}

// PersistCommitEagerly makes SetHardState persist every new commit index, not only new
// terms and votes. A group whose state machine is replayed from its own log at start (the
// controller: it also tells a restarted broker where its peers are) needs the commit
// index on disk; partition groups learn it again from their leader. Call it before the
// group runs.
func (s *LogStorage) PersistCommitEagerly() {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.eagerCommit = true
}

var _ etcdraft.Storage = (*LogStorage)(nil)

// Open opens (creating if needed) the group's log in opts.Dir through opts.FS (the real
// filesystem if nil) and its state file beside it, and finishes a snapshot installation
// that a crash interrupted. A torn or corrupt state file is ErrCorruptState; a HardState
// that commits beyond the recovered log is ErrStateAhead.
func Open(opts storage.Options) (*LogStorage, error) {
	if opts.FS == nil {
		opts.FS = storage.OSFS()
	}
	log, err := storage.Open(opts)
	if err != nil {
		return nil, err
	}
	s, err := openOn(log, opts.FS, filepath.Join(opts.Dir, StateFileName))
	if err != nil {
		log.Close()
		return nil, err
	}
	return s, nil
}

func openOn(log *storage.Log, fs storage.FS, statePath string) (*LogStorage, error) {
	st, _, err := readState(fs, statePath)
	if err != nil {
		return nil, err
	}
	votePath := filepath.Join(filepath.Dir(statePath), VoteFileName)
	vr, found, err := readVoteFile(fs, votePath)
	if err != nil {
		return nil, err
	}
	if found {
		mergeVote(&st, vr)
	}
	s := &LogStorage{log: log, fs: fs, statePath: statePath, st: st, durableCommit: st.Commit,
		vote: voteFile{fs: fs, path: votePath, seq: vr.seq}}
	// ApplySnapshot writes the state file before it resets the log; finish the reset if a
	// crash came between the two. A log that already holds the snapshot's entry (same
	// index and term) holds the same prefix, so it is kept.
	if sp := st.Snap; sp.Index > 0 {
		t, err := log.Term(sp.Index)
		switch {
		case errors.Is(err, storage.ErrCompacted):
			// The log starts beyond the snapshot: installed, and later trimmed.
		case err == nil && t == sp.Term:
		case err == nil || errors.Is(err, storage.ErrUnavailable):
			if err := log.Reset(sp.Index+1, sp.Term, sp.NextOffset); err != nil {
				return nil, err
			}
		default:
			return nil, err
		}
	}
	if last := log.LastIndex(); st.Commit > last {
		return nil, fmt.Errorf("%w: commit %d, last index %d", ErrStateAhead, st.Commit, last)
	} else if last > max(st.Commit, log.FirstIndex()-1) {
		s.untrackedTo = last
	}
	return s, nil
}

// Log returns the underlying partition log (for reads by the layers above; writes go
// through LogStorage).
func (s *LogStorage) Log() *storage.Log { return s.log }

// Close closes the log (flushing it) and the vote file.
func (s *LogStorage) Close() error {
	s.writeMu.Lock()
	verr := s.vote.close()
	s.writeMu.Unlock()
	return errors.Join(s.log.Close(), verr)
}

// ---- raft.Storage ----

// InitialState returns the persisted HardState and the current ConfState. The commit
// index is raised to the log's prefix boundary if it lies below it (the prefix was
// committed before it could be removed).
func (s *LogStorage) InitialState() (*pb.HardState, *pb.ConfState, error) {
	s.mu.Lock()
	st := s.st.clone()
	s.mu.Unlock()
	commit := max(st.Commit, s.log.FirstIndex()-1)
	hs := &pb.HardState{Term: new(st.Term), Vote: new(st.Vote), Commit: new(commit)}
	cs := &pb.ConfState{}
	if n := len(st.Confs); n > 0 {
		cs = proto.Clone(st.Confs[n-1].CS).(*pb.ConfState)
	}
	return hs, pb.EnsureConfState(cs), nil
}

// Entries returns the entries in [lo, hi), at least one if any, and no more than fit in
// maxSize by raft's measure (the protobuf size of each entry). ErrCompacted if lo is below
// FirstIndex; ErrUnavailable if hi is beyond LastIndex+1 or the log is empty.
func (s *LogStorage) Entries(lo, hi, maxSize uint64) ([]*pb.Entry, error) {
	if lo < s.log.FirstIndex() {
		return nil, etcdraft.ErrCompacted
	}
	if hi > s.log.LastIndex()+1 || s.log.LastIndex() < s.log.FirstIndex() {
		return nil, etcdraft.ErrUnavailable
	}
	if ents, ok := s.cache.get(lo, hi, maxSize); ok {
		return ents, nil
	}
	return s.entriesFromLog(lo, hi, maxSize)
}

// entriesFromLog is Entries read from the segment files.
func (s *LogStorage) entriesFromLog(lo, hi, maxSize uint64) ([]*pb.Entry, error) {
	var out []*pb.Entry
	var total uint64
	for next := lo; next < hi; {
		// storage measures payload + 25 bytes per entry, raft the protobuf encoding; ask
		// for what is left of the budget and read again if raft's measure allows more.
		chunk, err := s.log.Entries(next, hi, maxSize-min(total, maxSize))
		if err != nil {
			return nil, mapErr(err)
		}
		if len(chunk) == 0 {
			return nil, etcdraft.ErrUnavailable // truncated meanwhile
		}
		for _, se := range chunk {
			e, err := fromStorage(se)
			if err != nil {
				return nil, err
			}
			size := uint64(proto.Size(e))
			if len(out) > 0 && total+size > maxSize {
				return out, nil
			}
			total += size
			out = append(out, e)
			next = se.Index + 1
		}
	}
	return out, nil
}

// Term returns the term of entry i, for i in [FirstIndex-1, LastIndex].
func (s *LogStorage) Term(i uint64) (uint64, error) {
	t, err := s.log.Term(i)
	return t, mapErr(err)
}

// LastIndex is the index of the last entry written (not necessarily flushed).
func (s *LogStorage) LastIndex() (uint64, error) { return s.log.LastIndex(), nil }

// FirstIndex is the index of the first entry the log still holds.
func (s *LogStorage) FirstIndex() (uint64, error) { return s.log.FirstIndex(), nil }

// Snapshot describes the log's prefix boundary: index FirstIndex-1, its term, the
// ConfState in force there, and in Data the Kafka offset the entry at FirstIndex starts at.
// It carries no entries or records (see the package documentation).
func (s *LogStorage) Snapshot() (*pb.Snapshot, error) {
	for attempt := 0; ; attempt++ {
		snap, err := s.snapshotOnce()
		if errors.Is(err, errRetry) && attempt < 100 {
			continue // the prefix or the log end moved under us
		}
		return snap, err
	}
}

var errRetry = errors.New("retry")

func (s *LogStorage) snapshotOnce() (*pb.Snapshot, error) {
	first := s.log.FirstIndex()
	boundary := first - 1
	if boundary == 0 {
		// The log still holds every entry from index 1, so there is no prefix to describe:
		// a leader asks for a snapshot only when it failed to read the term or the entries
		// a follower needs next, and the follower must get those entries instead. etcd raft
		// panics on an empty snapshot but retries, on the follower's next heartbeat
		// response, after this error. (Seen in a chaos session with moves: a leader just
		// restarted from a power cut asked for one on its first round.)
		return nil, etcdraft.ErrSnapshotTemporarilyUnavailable
	}
	term, err := s.log.Term(boundary)
	if err != nil {
		if errors.Is(err, storage.ErrCompacted) {
			return nil, errRetry
		}
		return nil, mapErr(err)
	}
	var next int64
	if s.log.LastIndex() >= first {
		ents, err := s.log.Entries(first, first+1, 0)
		if errors.Is(err, storage.ErrCompacted) || errors.Is(err, storage.ErrUnavailable) || (err == nil && len(ents) == 0) {
			return nil, errRetry
		}
		if err != nil {
			return nil, err
		}
		next = ents[0].BaseOffset
	} else {
		next = s.log.LogEndOffset()
		if s.log.LastIndex() >= first || s.log.FirstIndex() != first {
			return nil, errRetry
		}
	}
	s.mu.Lock()
	cs, ok := s.st.confAsOf(boundary)
	s.mu.Unlock()
	if !ok {
		if boundary > 0 {
			// No configuration is known at the boundary: nothing valid to send yet.
			return nil, etcdraft.ErrSnapshotTemporarilyUnavailable
		}
		cs = &pb.ConfState{}
	}
	return &pb.Snapshot{
		Data: EncodeSnapshotData(SnapshotData{NextOffset: next}),
		Metadata: &pb.SnapshotMetadata{
			ConfState: pb.EnsureConfState(proto.Clone(cs).(*pb.ConfState)),
			Index:     new(boundary),
			Term:      new(term),
		},
	}, nil
}

func mapErr(err error) error {
	switch {
	case errors.Is(err, storage.ErrCompacted):
		return etcdraft.ErrCompacted
	case errors.Is(err, storage.ErrUnavailable):
		return etcdraft.ErrUnavailable
	}
	return err
}

// ---- writes ----

// Append writes entries handed over by raft (the leader's own, or those of a
// MsgStorageAppend) to the log, not durably (see Flush). As with raft.MemoryStorage, the
// entries replace the log from entries[0].Index on: entries below FirstIndex are ignored,
// a leading run that the log already holds with the same terms is kept as it is (by Log
// Matching it is the same), the log is truncated at the first entry whose term differs,
// and everything after the last given entry is removed. entries[0].Index beyond
// LastIndex+1 is an error. A data entry that is not a well-formed RecordBatch v2 fails
// with storage.ErrInvalidBatch (after any truncation, which leaves a valid prefix).
func (s *LogStorage) Append(entries []*pb.Entry) error {
	_, err := s.appendEntries(entries, false)
	return err
}

// appendEntries is Append, returning the entries it wrote with their Kafka offsets filled
// in (nil when every given entry was already held). With cache, the written entries are
// also kept in memory for Entries (a leader's appends); without, the cache is dropped.
func (s *LogStorage) appendEntries(entries []*pb.Entry, cache bool) (conv []storage.Entry, err error) {
	defer func() {
		if err != nil || !cache {
			s.cache.reset()
		}
	}()
	if len(entries) == 0 {
		return nil, nil
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	for i := 1; i < len(entries); i++ {
		if entries[i].GetIndex() != entries[i-1].GetIndex()+1 {
			return nil, fmt.Errorf("raft: append: entry %d has index %d after %d", i, entries[i].GetIndex(), entries[i-1].GetIndex())
		}
	}
	first, last := s.log.FirstIndex(), s.log.LastIndex()
	if lo := entries[0].GetIndex(); lo < first {
		if lo+uint64(len(entries)) <= first {
			return nil, nil
		}
		entries = entries[first-lo:]
	}
	if lo := entries[0].GetIndex(); lo > last+1 {
		return nil, fmt.Errorf("raft: append at index %d leaves a gap after last index %d", lo, last)
	}
	i := 0
	for ; i < len(entries) && entries[i].GetIndex() <= last; i++ {
		t, err := s.log.Term(entries[i].GetIndex())
		if err != nil {
			return nil, err
		}
		if t != entries[i].GetTerm() {
			break
		}
	}
	newLast := entries[len(entries)-1].GetIndex()
	if i == len(entries) {
		if newLast < last {
			s.truncatedFrom(newLast + 1)
			s.cache.truncate(newLast + 1)
			return nil, s.log.TruncateSuffix(newLast + 1)
		}
		return nil, nil
	}
	if entries[i].GetIndex() <= last {
		if err := s.log.TruncateSuffix(entries[i].GetIndex()); err != nil {
			return nil, err
		}
	}
	s.truncatedFrom(entries[i].GetIndex())
	s.cache.truncate(entries[i].GetIndex())
	conv = make([]storage.Entry, 0, len(entries)-i)
	for _, e := range entries[i:] {
		conv = append(conv, toStorage(e))
		if t := e.GetType(); t == pb.EntryConfChange || t == pb.EntryConfChangeV2 {
			s.confPending = append(s.confPending, e.GetIndex())
		}
	}
	if err := s.log.Append(conv); err != nil {
		s.truncatedFrom(entries[i].GetIndex()) // what failed may be partly written: forget it all
		return nil, err
	}
	if cache {
		s.cache.add(entries[i:])
	}
	return conv, nil
}

// Flush makes everything appended so far durable.
func (s *LogStorage) Flush() error { return s.log.Flush() }

// WrittenIndex is the index written up to (appended, possibly not yet fsynced): what a
// follower reports to the leader as "written" for the majority-replicated boundary. It
// moves back when a conflicting suffix is truncated, so a report must carry the term of
// the entry (Term(WrittenIndex())).
func (s *LogStorage) WrittenIndex() uint64 { return s.log.LastIndex() }

// FlushedIndex is the index fsynced up to.
func (s *LogStorage) FlushedIndex() uint64 { return s.log.FlushedIndex() }

// HardState returns the persisted HardState.
func (s *LogStorage) HardState() (term, vote, commit uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Term, s.st.Vote, s.st.Commit
}

// SetHardState persists hs (durably, before it returns) unless it is empty or unchanged.
// Its commit index must not exceed the flushed log: flush the entries first.
func (s *LogStorage) SetHardState(hs *pb.HardState) error {
	if etcdraft.IsEmptyHardState(hs) {
		return nil
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	st := s.st.clone()
	s.mu.Unlock()
	if st.Term == hs.GetTerm() && st.Vote == hs.GetVote() && (!s.eagerCommit || hs.GetCommit() <= st.Commit) && !s.commitCoversConf(hs.GetCommit()) {
		// Only the commit index moved. Raft needs a durable term and vote, not a durable
		// commit: after a restart a lower commit is learned again from the leader (or, for
		// a sole voter, from its next election). Keeping it in memory spares the three
		// fsyncs of a state-file replacement on every group commit; the next save (a new
		// term or vote, a configuration change) writes it.
		if hs.GetCommit() > st.Commit {
			s.mu.Lock()
			s.st.Commit = hs.GetCommit()
			s.mu.Unlock()
		}
		return nil
	}
	st.Term, st.Vote, st.Commit = hs.GetTerm(), hs.GetVote(), max(st.Commit, hs.GetCommit())
	if err := s.vote.write(st.Term, st.Vote, st.Commit); err != nil {
		return err
	}
	s.mu.Lock()
	s.st.Term, s.st.Vote, s.st.Commit = st.Term, st.Vote, st.Commit
	s.mu.Unlock()
	s.noteDurableCommit(st.Commit)
	return nil
}

// commitCoversConf reports whether commit would be the first persisted commit to cover an
// appended configuration change (or may cover one: see untrackedTo). Caller holds writeMu.
func (s *LogStorage) commitCoversConf(commit uint64) bool {
	if commit <= s.durableCommit {
		return false
	}
	return (len(s.confPending) > 0 && s.confPending[0] <= commit) || s.untrackedTo > s.durableCommit
}

// truncatedFrom forgets the pending configuration changes at and above index, which the
// log no longer holds. Caller holds writeMu.
func (s *LogStorage) truncatedFrom(index uint64) {
	n := len(s.confPending)
	for n > 0 && s.confPending[n-1] >= index {
		n--
	}
	s.confPending = s.confPending[:n]
	if s.untrackedTo >= index {
		s.untrackedTo = index - 1
	}
}

// SetConfState persists cs as the configuration in force from the entry at index on (0
// for the bootstrap configuration). Call it when a configuration change is applied; the
// host must then start raft with Config.Applied >= index, so the change is not applied
// twice. index must not be below that of the last ConfState set.
func (s *LogStorage) SetConfState(index uint64, cs *pb.ConfState) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	st := s.st.clone()
	s.mu.Unlock()
	c := confAt{Index: index, CS: pb.EnsureConfState(proto.Clone(cs).(*pb.ConfState))}
	if n := len(st.Confs); n > 0 && st.Confs[n-1].Index >= index {
		if st.Confs[n-1].Index > index {
			return fmt.Errorf("raft: conf state at index %d after one at %d", index, st.Confs[n-1].Index)
		}
		st.Confs = st.Confs[:n-1]
	}
	st.Confs = append(st.Confs, c)
	// The change is applied, so committed and (raft applies only stable entries) flushed
	// here: a restart starts raft with Applied = index, which must not exceed the commit.
	st.Commit = max(st.Commit, index)
	st.prune(s.log.FirstIndex() - 1)
	return s.saveLocked(st)
}

// bootstrapInLog writes cs into an empty log as etcd raft's RawNode.Bootstrap does: one
// ConfChange entry per member at term 1 (voters first, then learners; indexes 1..n),
// flushed, then, in one state write, the conf state at n and the HardState {term 1,
// commit n}. A crash before the state write leaves no configuration, so the next start
// writes the same entries again (they are kept as they are: same index, same term).
func (s *LogStorage) bootstrapInLog(cs *pb.ConfState) error {
	ents, err := bootstrapEntries(cs)
	if err != nil {
		return err
	}
	if s.log.FirstIndex() != 1 || s.log.LastIndex() > uint64(len(ents)) {
		return fmt.Errorf("raft: bootstrap into a log that is not empty (indexes %d to %d)", s.log.FirstIndex(), s.log.LastIndex())
	}
	if last := s.log.LastIndex(); last > 0 {
		// A crash came before the state write: what is there must be this bootstrap's.
		held, err := s.entriesFromLog(1, last+1, math.MaxUint64)
		if err != nil {
			return err
		}
		for i, e := range held {
			if !proto.Equal(e, ents[i]) {
				return fmt.Errorf("raft: bootstrap: the log's entry %d is not this configuration's", e.GetIndex())
			}
		}
	}
	if _, err := s.appendEntries(ents, false); err != nil {
		return err
	}
	if err := s.log.Flush(); err != nil {
		return err
	}
	n := uint64(len(ents))
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	st := s.st.clone()
	s.mu.Unlock()
	st.Confs = []confAt{{Index: n, CS: pb.EnsureConfState(proto.Clone(cs).(*pb.ConfState))}}
	st.Term, st.Commit = max(st.Term, 1), max(st.Commit, n)
	return s.saveLocked(st)
}

// bootstrapEntries are the log's first entries for the initial configuration cs.
func bootstrapEntries(cs *pb.ConfState) ([]*pb.Entry, error) {
	var ents []*pb.Entry
	add := func(typ pb.ConfChangeType, id uint64) error {
		data, err := proto.Marshal(&pb.ConfChange{Type: typ.Enum(), NodeId: new(id)})
		if err != nil {
			return err
		}
		ents = append(ents, &pb.Entry{Type: pb.EntryConfChange.Enum(), Term: new(uint64(1)),
			Index: new(uint64(len(ents) + 1)), Data: data})
		return nil
	}
	for _, id := range cs.GetVoters() {
		if err := add(pb.ConfChangeType_ConfChangeAddNode, id); err != nil {
			return nil, err
		}
	}
	for _, id := range cs.GetLearners() {
		if err := add(pb.ConfChangeType_ConfChangeAddLearnerNode, id); err != nil {
			return nil, err
		}
	}
	if len(ents) == 0 {
		return nil, fmt.Errorf("raft: bootstrap with an empty configuration")
	}
	return ents, nil
}

// Joinable reports whether a replica added to the group later can rebuild its
// configuration from this log: false when the initial configuration is in force from
// index 0 (written by an earlier release, not in the log) and the log still starts at
// index 1, so a leader would send a new replica entries and no snapshot.
func (s *LogStorage) Joinable() bool {
	s.mu.Lock()
	atZero := len(s.st.Confs) > 0 && s.st.Confs[0].Index == 0
	s.mu.Unlock()
	return !atZero || s.log.FirstIndex() > 1
}

// ApplyFloor is where Raft starts applying after a restart: the last ConfState's index,
// unless retention removed the entry that set it, in which case it is the index before
// the log's first entry (the snapshot index, which etcd raft takes as applied already).
// An Applied below that is out of range for etcd raft.
func (s *LogStorage) ApplyFloor() uint64 {
	floor := s.ConfIndex()
	if first := s.log.FirstIndex(); first > 0 {
		floor = max(floor, first-1)
	}
	return floor
}

// ConfIndex is the index of the last ConfState set.
func (s *LogStorage) ConfIndex() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.st.Confs); n > 0 {
		return s.st.Confs[n-1].Index
	}
	return 0
}

// saveLocked writes st as the state file and makes it the current state. Caller holds
// writeMu.
func (s *LogStorage) saveLocked(st raftState) error {
	if err := writeState(s.fs, s.statePath, &st); err != nil {
		return err
	}
	s.mu.Lock()
	s.st = st
	s.mu.Unlock()
	s.noteDurableCommit(st.Commit)
	return nil
}

// noteDurableCommit records that commit is persisted: the configuration changes it covers
// no longer need an eager commit. Caller holds writeMu.
func (s *LogStorage) noteDurableCommit(commit uint64) {
	s.durableCommit = commit
	n := 0
	for n < len(s.confPending) && s.confPending[n] <= commit {
		n++
	}
	s.confPending = s.confPending[n:]
	if s.untrackedTo <= commit {
		s.untrackedTo = 0
	}
}

// JoinGate reports whether the replica is join-gated (see Host.AddGroup) and its floor (0:
// not yet learned).
func (s *LogStorage) JoinGate() (gated bool, floor uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Join.Gated, s.st.Join.Floor
}

// setJoinGate persists the replica's join gate.
func (s *LogStorage) setJoinGate(j joinGate) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	st := s.st.clone()
	s.mu.Unlock()
	if st.Join == j {
		return nil
	}
	st.Join = j
	return s.saveLocked(st)
}

// ApplySnapshot installs a snapshot received from the leader: the log is Reset to start
// right after the snapshot's index, with its term as the previous term and the Kafka offset
// carried in Snapshot.Data as its next offset; the snapshot's ConfState becomes the
// current one and the commit index is raised to the snapshot index. The state file is
// written first (with the snapshot's position), so Open finishes the reset after a crash.
// A snapshot at or below the log's prefix boundary is raft.ErrSnapOutOfDate.
func (s *LogStorage) ApplySnapshot(snap *pb.Snapshot) error {
	md := snap.GetMetadata()
	index, term := md.GetIndex(), md.GetTerm()
	if index == 0 {
		return fmt.Errorf("raft: apply snapshot: index 0")
	}
	sd, err := DecodeSnapshotData(snap.GetData())
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if b := s.log.FirstIndex() - 1; b != 0 && index <= b {
		return etcdraft.ErrSnapOutOfDate
	}
	s.mu.Lock()
	st := s.st.clone()
	s.mu.Unlock()
	st.Snap = snapPos{Index: index, Term: term, NextOffset: sd.NextOffset}
	st.Confs = []confAt{{Index: index, CS: pb.EnsureConfState(proto.Clone(md.GetConfState()).(*pb.ConfState))}}
	st.Commit = max(st.Commit, index)
	st.Term = max(st.Term, term)
	if err := s.saveLocked(st); err != nil {
		return err
	}
	s.cache.reset()
	s.confPending, s.untrackedTo = nil, 0 // the log is replaced from the snapshot on
	return s.log.Reset(index+1, term, sd.NextOffset)
}

// ---- entry and snapshot encoding ----

// toStorage converts a raft entry (see the package documentation for the encoding).
func toStorage(e *pb.Entry) storage.Entry {
	se := storage.Entry{Index: e.GetIndex(), Term: e.GetTerm()}
	if e.GetType() == pb.EntryNormal && len(e.GetData()) > 0 {
		se.Type, se.Data = storage.EntryData, e.GetData()
		return se
	}
	se.Type = storage.EntryInternal
	se.Data = make([]byte, 1+len(e.GetData()))
	se.Data[0] = byte(e.GetType())
	copy(se.Data[1:], e.GetData())
	return se
}

// fromStorage converts a stored entry back. Term and Index are always set; Type only when
// it is not EntryNormal, Data only when non-empty (raft's own encoding of such entries).
func fromStorage(se storage.Entry) (*pb.Entry, error) {
	e := &pb.Entry{Index: new(se.Index), Term: new(se.Term)}
	switch se.Type {
	case storage.EntryData:
		e.Data = se.Data
	case storage.EntryInternal:
		if len(se.Data) == 0 {
			return e, nil // an empty internal entry: an empty normal entry
		}
		typ := pb.EntryType(se.Data[0])
		switch typ {
		case pb.EntryNormal:
		case pb.EntryConfChange, pb.EntryConfChangeV2:
			e.Type = typ.Enum()
		default:
			return nil, fmt.Errorf("%w: index %d: internal entry tag %d", storage.ErrCorrupt, se.Index, se.Data[0])
		}
		if len(se.Data) > 1 {
			e.Data = se.Data[1:]
		}
	default:
		return nil, fmt.Errorf("%w: index %d: entry type %d", storage.ErrCorrupt, se.Index, se.Type)
	}
	return e, nil
}

// SnapshotData is what a snapshot carries in Snapshot.Data.
type SnapshotData struct {
	// NextOffset is the Kafka offset the entry right after the snapshot index starts at.
	NextOffset int64
}

const snapDataVersion = 1

// ErrBadSnapshotData reports a Snapshot.Data that is not a valid SnapshotData encoding.
var ErrBadSnapshotData = errors.New("raft: malformed snapshot data")

// EncodeSnapshotData lays d out as version u8 (=1) | next offset i64 | CRC32C u32 of the
// first 9 bytes (big-endian).
func EncodeSnapshotData(d SnapshotData) []byte {
	b := make([]byte, 0, 13)
	b = append(b, snapDataVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(d.NextOffset))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// DecodeSnapshotData parses Snapshot.Data.
func DecodeSnapshotData(b []byte) (SnapshotData, error) {
	if len(b) != 13 || b[0] != snapDataVersion || crc32.Checksum(b[:9], castagnoli) != binary.BigEndian.Uint32(b[9:]) {
		return SnapshotData{}, fmt.Errorf("%w: %d bytes", ErrBadSnapshotData, len(b))
	}
	d := SnapshotData{NextOffset: int64(binary.BigEndian.Uint64(b[1:]))}
	if d.NextOffset < 0 {
		return SnapshotData{}, fmt.Errorf("%w: negative offset", ErrBadSnapshotData)
	}
	return d, nil
}
