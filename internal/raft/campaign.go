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

// The join gate, the campaign switch's per-group twin. A replica created empty with no
// bootstrap (a joiner: a move added it) replays the leader's log from its start, and so
// passes through every configuration the group ever had; each applied change is persisted
// at its index, the commit index only lazily. A joiner that restarts mid-replay therefore
// comes back in an old configuration, and if that one named it a voter (the group moved
// away from this broker and back), it and the other joiners in the same state could elect
// one of their own beside the real group. So a joiner is gated until it has applied its log
// up to its join floor: the commit index of the first append it gets from a leader. That
// leader had applied the change adding this replica (it sends appends to members only),
// so the floor is at or above it and above every older configuration; once applied up to
// it, this replica never restarts in a configuration older than the one that added it.
//
// While gated the group is not ticked (an election timeout could elect a replica that is
// the only voter of an old configuration without sending a message), its outbound vote
// requests are dropped, it answers no vote request (they are dropped: the real group does
// not count it yet), it ignores MsgTimeoutNow, and Campaign does nothing. The gate is
// durable from creation (LogStorage's state file: gated, floor unknown), the floor once
// learned, and it is lifted, durably, once the applied index (or an installed snapshot's)
// reaches the floor.

// loadJoinGate sets up the gate of a group being added: a joiner's is persisted before
// raft starts; a restarted replica's is read back, and lifted if it was passed already.
func (g *group) loadJoinGate(joiner bool) error {
	gated, floor := g.ls.JoinGate()
	if joiner && !gated {
		if err := g.ls.setJoinGate(joinGate{Gated: true}); err != nil {
			return err
		}
		gated = true
	}
	g.gated.Store(gated)
	g.floor = floor
	return g.passJoinFloor(g.applied)
}

// noteJoinFloor learns the floor from m, an inbound message of a gated group, if it is
// the first append from a leader of this replica's term or a later one.
func (g *group) noteJoinFloor(m *pb.Message) error {
	if g.floor != 0 || m.GetType() != pb.MsgApp || m.GetCommit() == 0 || m.GetTerm() < g.term {
		return nil
	}
	if err := g.ls.setJoinGate(joinGate{Gated: true, Floor: m.GetCommit()}); err != nil {
		return err
	}
	g.floor = m.GetCommit()
	return nil
}

// passJoinFloor lifts the gate once the replica has applied (or installed a snapshot) up
// to applied, if that reaches the floor.
func (g *group) passJoinFloor(applied uint64) error {
	if !g.gated.Load() || g.floor == 0 || applied < g.floor {
		return nil
	}
	if err := g.ls.setJoinGate(joinGate{}); err != nil {
		return err
	}
	g.gated.Store(false)
	g.h.opts.Logger.Infof("raft host %d: group %d: joined: applied %d, at or past join floor %d", g.h.id, g.id, applied, g.floor)
	return nil
}

// gateDropsOutbound reports whether an outbound message is a vote request of a gated group.
func (g *group) gateDropsOutbound(m *pb.Message) bool {
	if !g.gated.Load() {
		return false
	}
	t := m.GetType()
	return t == pb.MsgVote || t == pb.MsgPreVote
}

// gateDropsInbound reports whether an inbound message is a vote request or a MsgTimeoutNow
// that a gated group does not act on.
func (g *group) gateDropsInbound(m *pb.Message) bool {
	if !g.gated.Load() {
		return false
	}
	switch m.GetType() {
	case pb.MsgVote, pb.MsgPreVote, pb.MsgTimeoutNow:
		return true
	}
	return false
}
