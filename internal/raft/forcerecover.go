package raft

import (
	"fmt"
	"slices"

	"go.etcd.io/raft/v3/confchange"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"
)

// Force recovery (the disaster procedure for a group that lost a majority for good) makes
// one surviving replica the group's only voter without the consent of a quorum, which raft
// by design cannot give. It is done on the replica's storage while the group is not
// running, and written into the log as ordinary configuration changes (leave any joint
// configuration, enter a joint one whose incoming half is this replica alone, leave it), so
// that a replica added later, which rebuilds every configuration by replaying the log, ends
// in the same configuration as this one. Everything the replica holds is committed by fiat,
// at a term above every term in its log.

// ForcedVoter is what ForceSoleVoter wrote.
type ForcedVoter struct {
	// Index is the last index after the forced changes (the commit index); Term their term.
	Index, Term uint64
	// Changed is false when the replica already was the only member (a repeat after a
	// crash): nothing was written.
	Changed bool
}

// ForceSoleVoter makes id the only member of the group this storage belongs to. The group
// must not be running on the storage. It flushes the log first, so every entry the replica
// held is kept. It is idempotent: once the configuration is id alone, it writes nothing.
func (s *LogStorage) ForceSoleVoter(id uint64) (ForcedVoter, error) {
	if id == 0 {
		return ForcedVoter{}, fmt.Errorf("raft: force recovery: node id 0")
	}
	if err := s.log.Flush(); err != nil {
		return ForcedVoter{}, err
	}
	trk, confs, err := s.configAtLastIndex()
	if err != nil {
		return ForcedVoter{}, err
	}
	last := s.log.LastIndex()
	lastTerm, err := s.log.Term(last)
	if err != nil {
		return ForcedVoter{}, err
	}
	cs := trk.ConfState()
	if slices.Equal(cs.GetVoters(), []uint64{id}) && len(cs.GetVotersOutgoing()) == 0 && len(cs.GetLearners()) == 0 && len(cs.GetLearnersNext()) == 0 {
		return ForcedVoter{Index: last, Term: lastTerm}, s.forceState(append(confs, confAt{Index: last, CS: cs}), last, lastTerm)
	}
	if len(cs.GetVoters()) == 0 {
		return ForcedVoter{}, fmt.Errorf("raft: force recovery: the replica holds no configuration with voters (it never caught up); recover from another one")
	}
	s.mu.Lock()
	term := max(s.st.Term, lastTerm) + 1
	s.mu.Unlock()
	var ccs []*pb.ConfChangeV2
	if len(cs.GetVotersOutgoing()) > 0 {
		ccs = append(ccs, &pb.ConfChangeV2{})
	}
	enter := &pb.ConfChangeV2{Transition: pb.ConfChangeTransition_ConfChangeTransitionJointExplicit.Enum()}
	others := append(append(append(slices.Clone(cs.GetVoters()), cs.GetLearners()...), cs.GetVotersOutgoing()...), cs.GetLearnersNext()...)
	slices.Sort(others)
	for _, m := range slices.Compact(others) {
		if m != id {
			enter.Changes = append(enter.Changes, &pb.ConfChangeSingle{Type: pb.ConfChangeType_ConfChangeRemoveNode.Enum(), NodeId: new(m)})
		}
	}
	enter.Changes = append(enter.Changes, &pb.ConfChangeSingle{Type: pb.ConfChangeType_ConfChangeAddNode.Enum(), NodeId: new(id)})
	ccs = append(ccs, enter, &pb.ConfChangeV2{})
	ents := make([]*pb.Entry, 0, len(ccs))
	for i, cc := range ccs {
		if trk, err = applyConf(trk, cc, last+uint64(i)); err != nil {
			return ForcedVoter{}, fmt.Errorf("raft: force recovery: %w", err)
		}
		confs = append(confs, confAt{Index: last + 1 + uint64(i), CS: trk.ConfState()})
		data, err := proto.Marshal(cc)
		if err != nil {
			return ForcedVoter{}, err
		}
		ents = append(ents, &pb.Entry{Type: pb.EntryConfChangeV2.Enum(), Term: new(term), Index: new(last + 1 + uint64(i)), Data: data})
	}
	if _, err := s.appendEntries(ents, false); err != nil {
		return ForcedVoter{}, err
	}
	if err := s.log.Flush(); err != nil {
		return ForcedVoter{}, err
	}
	end := last + uint64(len(ents))
	return ForcedVoter{Index: end, Term: term, Changed: true}, s.forceState(confs, end, term)
}

// forceState records confs (ascending, the last at index) as applied, everything up to
// index committed, and term with no vote cast in it. Every configuration the log's entries
// lead through is kept, not only the last: a snapshot at a later log start must carry the
// one in force there (confAsOf), and the changes committed by the recovery were never
// applied one by one.
func (s *LogStorage) forceState(confs []confAt, index, term uint64) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	st := s.st.clone()
	s.mu.Unlock()
	for _, c := range confs {
		if n := len(st.Confs); n == 0 || st.Confs[n-1].Index < c.Index {
			st.Confs = append(st.Confs, confAt{Index: c.Index, CS: pb.EnsureConfState(c.CS)})
		}
	}
	if st.Term < term {
		st.Term, st.Vote = term, 0
	}
	st.Commit = max(st.Commit, index)
	// A joiner's gate (campaign.go) waits for a leader that will not come: the recovery
	// makes this replica the group, so it must campaign.
	st.Join = joinGate{}
	return s.saveLocked(st)
}

// configAtLastIndex is the configuration the log's configuration entries lead to: the one
// last applied here, with every change after it in the log applied on top, and the
// configuration after each of those changes.
func (s *LogStorage) configAtLastIndex() (tracker.ProgressTracker, []confAt, error) {
	s.mu.Lock()
	var cs *pb.ConfState
	var from uint64
	if n := len(s.st.Confs); n > 0 {
		cs, from = s.st.Confs[n-1].CS, s.st.Confs[n-1].Index
	}
	s.mu.Unlock()
	last := s.log.LastIndex()
	trk := tracker.MakeProgressTracker(1, 0)
	var confs []confAt
	if cs != nil {
		cfg, prs, err := confchange.Restore(confchange.Changer{Tracker: trk, LastIndex: last}, cs)
		if err != nil {
			return trk, nil, fmt.Errorf("raft: force recovery: restoring the configuration at %d: %w", from, err)
		}
		trk.Config, trk.Progress = cfg, prs
	}
	// Read in bounded pieces: the unapplied tail may hold much data, and only its few
	// configuration entries matter.
	for lo := max(from+1, s.log.FirstIndex()); lo <= last; {
		ents, err := s.entriesFromLog(lo, last+1, 8<<20)
		if err != nil {
			return trk, nil, err
		}
		if len(ents) == 0 {
			return trk, nil, fmt.Errorf("raft: force recovery: no entry at index %d", lo)
		}
		for _, e := range ents {
			var cc *pb.ConfChangeV2
			switch e.GetType() {
			case pb.EntryConfChange:
				v1 := &pb.ConfChange{}
				if err := proto.Unmarshal(e.GetData(), v1); err != nil {
					return trk, nil, err
				}
				cc = v1.AsV2()
			case pb.EntryConfChangeV2:
				cc = &pb.ConfChangeV2{}
				if err := proto.Unmarshal(e.GetData(), cc); err != nil {
					return trk, nil, err
				}
			default:
				continue
			}
			if trk, err = applyConf(trk, cc, last); err != nil {
				return trk, nil, fmt.Errorf("raft: force recovery: the change at %d: %w", e.GetIndex(), err)
			}
			confs = append(confs, confAt{Index: e.GetIndex(), CS: trk.ConfState()})
		}
		lo = ents[len(ents)-1].GetIndex() + 1
	}
	return trk, confs, nil
}

// applyConf applies one change as raft does when it applies the entry.
func applyConf(trk tracker.ProgressTracker, cc *pb.ConfChangeV2, lastIndex uint64) (tracker.ProgressTracker, error) {
	ch := confchange.Changer{Tracker: trk, LastIndex: lastIndex}
	var err error
	switch autoLeave, enter := cc.EnterJoint(); {
	case cc.LeaveJoint():
		trk.Config, trk.Progress, err = ch.LeaveJoint()
	case enter:
		trk.Config, trk.Progress, err = ch.EnterJoint(autoLeave, cc.GetChanges()...)
	default:
		trk.Config, trk.Progress, err = ch.Simple(cc.GetChanges()...)
	}
	return trk, err
}
