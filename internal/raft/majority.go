package raft

import "go.etcd.io/raft/v3/quorum"

// The majority-replicated boundary as pure functions of what a leader knows (no RawNode,
// no storage, no locks), so that the rule of DESIGN.md §2 is tested on tables
// (majority_test.go) apart from the host that feeds it. The host (updateMajority) gathers
// the inputs under the group's lock and signals the proposals the result covers.

// ackMap holds each voter's written index for quorum.JointConfig.CommittedIndex.
type ackMap map[uint64]quorum.Index

func (m ackMap) AckedIndex(id uint64) (quorum.Index, bool) {
	v, ok := m[id]
	return v, ok
}

// voterWritten is the index the leader (self) counts voter id as holding: its own written
// index (own) for itself; for a follower, its largest written report in the current term,
// with raft's Match as a floor (a follower's flushed entries are written too, and reports
// may be lost or not yet sent).
func voterWritten(id, self, own, match uint64, reports map[uint64]uint64) uint64 {
	if id == self {
		return own
	}
	return max(match, reports[id])
}

// termSource answers the term of a log index (LogStorage does). An interface rather than a
// func value, so that passing the storage does not allocate a closure per call.
type termSource interface {
	Term(index uint64) (uint64, error)
}

// majorityReplicated returns the majority-replicated boundary after prev: the index a
// quorum of conf has written according to acked (a joint configuration needs a majority of
// each half), if it is above prev, not above the leader's own written index own, and the
// entry there has the leader's term (as raft counts commit: an older-term entry can be
// overwritten by a log that never held it); otherwise prev. The boundary never moves back.
func majorityReplicated(conf quorum.JointConfig, acked quorum.AckedIndexer, prev, own, term uint64, log termSource) uint64 {
	idx := uint64(conf.CommittedIndex(acked))
	if idx > prev && idx <= own {
		if t, err := log.Term(idx); err == nil && t == term {
			return idx
		}
	}
	return prev
}
