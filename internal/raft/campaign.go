package raft

import (
	pb "go.etcd.io/raft/v3/raftpb"
)

// The campaign switch (maintenance mode, DESIGN.md §8): a host that must win no election
// keeps serving every group it holds as voter, answering votes and replicating, but never
// asks for a vote. Its outbound MsgVote and MsgPreVote requests are dropped (never the
// responses: a host that stopped answering votes could block its peers' elections), and
// an inbound MsgTimeoutNow, the leader's "campaign now" of a leadership transfer, is
// ignored. With PreVote on, a host whose pre-votes never leave stays at its term, so it
// does not disturb the leader either. A group whose only voter is this host still elects
// it: raft wins a one-voter election without sending a message, which is what a partition
// whose only live voter is in maintenance needs (it keeps a leader).

// SetCampaigning turns this host's campaigning on (the default) or off, for every group
// it holds. It takes effect at each group's next ready round.
func (h *Host) SetCampaigning(on bool) { h.noCampaign.Store(!on) }

// Campaigning reports whether this host may win elections (see SetCampaigning).
func (h *Host) Campaigning() bool { return !h.noCampaign.Load() }

// dropsOutbound reports whether an outbound message is a vote request the switch drops.
func (h *Host) dropsOutbound(m *pb.Message) bool {
	if !h.noCampaign.Load() {
		return false
	}
	t := m.GetType()
	return t == pb.MsgVote || t == pb.MsgPreVote
}

// ignoresInbound reports whether an inbound message is a transfer's MsgTimeoutNow the
// switch ignores.
func (h *Host) ignoresInbound(m *pb.Message) bool {
	return h.noCampaign.Load() && m.GetType() == pb.MsgTimeoutNow
}
