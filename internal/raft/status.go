package raft

import (
	"slices"

	etcdraft "go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
)

// Status describes one replica of a group. Indexes are raft log indexes.
type Status struct {
	Group, ID uint64
	State     etcdraft.StateType
	Leader    uint64
	Term      uint64
	// LogEnd is the last index written locally (maybe unflushed); LogEndOffset its Kafka
	// log end offset.
	LogEnd       uint64
	LogEndOffset int64
	// Flushed is the last index fsynced locally.
	Flushed uint64
	// MajorityReplicated (leader only; 0 elsewhere) is the last index written on a voting
	// majority, counted for current-term entries only; never below Committed.
	MajorityReplicated uint64
	// Committed is raft's commit index (flush-aware, see the host documentation).
	Committed uint64
	// LeaderVisible is the highest index this replica holds that its leader has reported
	// majority replicated (or committed) in the current term, never above its own log end
	// and never below Committed (visible.go): what a follower may serve. On a leader it is
	// MajorityReplicated; on a replica with no leader, or of a group that does not share
	// its visible index (GroupConfig.ShareVisible), Committed.
	LeaderVisible uint64
	// Applied is the last index handed to the ApplyFunc.
	Applied uint64
	// Voters and VotersOutgoing are the configuration this replica knows (outgoing: the
	// old half of a joint configuration).
	Voters, VotersOutgoing []uint64
	// Learners receive the log but do not vote; LearnersNext are outgoing voters that
	// become learners when the joint configuration is left.
	Learners, LearnersNext []uint64
	// PendingConf (leader only): a configuration change this leader appended is not yet
	// applied, or the leader has not yet applied the entries before its term. raft
	// replaces a conf change proposed meanwhile with an empty entry, silently, so a
	// caller plans from the applied configuration (Reconfig), never from a proposal's
	// return.
	PendingConf bool
	// TermStart (leader only) is the index of this leader's first entry of its term (0:
	// not appended yet). Until an entry at or past it is committed, the commit index is
	// what this replica learnt from its predecessor, which may trail what that one served.
	TermStart uint64
	// JoinGated: this replica joined the group empty (a move added it) and has not yet
	// applied the log up to its join floor, so it neither campaigns nor votes (campaign.go).
	JoinGated bool
	// Flushes counts this replica's log flushes (each one fsync round: group commit).
	Flushes uint64
	// Progress (leader only) is each member's replication state, learners included, by
	// Raft id.
	Progress map[uint64]PeerProgress
}

// PeerProgress is how far one member (voter or learner) holds the leader's log.
type PeerProgress struct {
	// Match is the last index the voter acknowledged durably (for the leader itself: its
	// flushed index); Written the last it reported written, maybe not yet fsynced.
	Match, Written uint64
}

// Status returns the current state of the group's replica.
func (h *Host) Status(id uint64) (Status, error) {
	g, err := h.group(id)
	if err != nil {
		return Status{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	bs := g.rn.BasicStatus()
	st := Status{
		Group: id, ID: h.id, State: bs.RaftState, Leader: bs.Lead, Term: bs.GetTerm(),
		LogEnd: g.ls.WrittenIndex(), LogEndOffset: g.ls.Log().LogEndOffset(),
		Flushed: g.ls.FlushedIndex(), Committed: bs.GetCommit(), Applied: g.applied,
		Flushes: g.flushes.Load(), JoinGated: g.gated.Load(),
	}
	st.LeaderVisible = st.Committed
	if bs.RaftState == etcdraft.StateFollower {
		st.LeaderVisible = g.followerVisible(st.Committed)
	}
	if bs.RaftState == etcdraft.StateLeader {
		st.MajorityReplicated = max(g.majority, st.Committed)
		st.LeaderVisible = st.MajorityReplicated
		st.Progress = make(map[uint64]PeerProgress, len(g.peerIDs)+1)
		g.rn.WithProgress(func(id uint64, _ etcdraft.ProgressType, pr tracker.Progress) {
			pp := PeerProgress{Match: pr.Match, Written: max(pr.Match, g.written[id])}
			if id == h.id {
				pp = PeerProgress{Match: st.Flushed, Written: st.LogEnd}
			}
			st.Progress[id] = pp
		})
	}
	st.Voters, st.VotersOutgoing = g.conf[0].Slice(), g.conf[1].Slice()
	st.Learners, st.LearnersNext = slices.Clone(g.learners), slices.Clone(g.learnersNext)
	st.PendingConf = g.pendingConf()
	if bs.RaftState == etcdraft.StateLeader {
		st.TermStart = g.ownFirst
	}
	return st, nil
}

// JoinableLog reports whether a replica added to group id later could rebuild the
// group's configuration from its leader (see LogStorage.Joinable): false for a group
// created by an earlier release whose log still starts at index 1. Moving such a
// partition must be refused.
func (h *Host) JoinableLog(id uint64) (bool, error) {
	g, err := h.group(id)
	if err != nil {
		return false, err
	}
	return g.ls.Joinable(), nil
}
