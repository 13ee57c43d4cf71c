package raft

import (
	etcdraft "go.etcd.io/raft/v3"
)

// # The leader's last visible index, told to its followers
//
// A follower that serves reads (KIP-392) must never serve above what its leader may serve:
// committed, or majority replicated where write caching is on (DESIGN.md §1). raft's
// commit reaches followers on its own (capped at each one's match); the majority-replicated
// index lives above the library, on the leader only. So a leader tells each follower its
// max(majority replicated, committed) in a VisibleReport: at the end of every round that
// moved it, to every peer, and with every raft heartbeat, so that a lost report is healed
// within a heartbeat interval. Reports are coalesced per peer and group in a round (the
// largest wins), and raftrpc carries them as a message type of their own, so a broker that
// does not know them drops them and raft's own traffic is untouched.
//
// A follower keeps the largest report of its current term from the leader it follows, and
// forgets it when its term or role changes. Status.LeaderVisible is what it may then serve:
// the report capped at its own log end, counted only if its entry there has the report's
// term (so its log matches the leader's up to it), and never below its own commit.

// VisibleReport is a leader's report to a follower of Group that in leader term Term it has
// majority-replicated (or committed) up to Index.
type VisibleReport struct {
	Group, Term, Index uint64
}

type fromVisible struct {
	from uint64
	VisibleReport
}

// leaderVisible is the index a leader reports (g.mu held).
func (g *group) leaderVisible() uint64 {
	return max(g.majority, g.rn.BasicStatus().GetCommit())
}

// reportVisible, at the end of a leader's round, tells every peer the leader's visible
// index if it moved since it was last told (g.mu held).
func (g *group) reportVisible(ob *outbox) {
	if g.state != etcdraft.StateLeader || len(g.peerIDs) == 0 {
		return // a sole voter has nobody to tell, and so costs nothing more per round
	}
	vis := g.leaderVisible()
	if vis == g.visSent {
		return
	}
	g.visSent = vis
	for _, p := range g.peerIDs {
		ob.addVisible(p, VisibleReport{Group: g.id, Term: g.term, Index: vis})
	}
}

// onVisible keeps a leader's report if it comes from the leader this follower follows, in
// its term (g.mu held, after refreshStatus).
func (g *group) onVisible(r fromVisible) {
	if g.state != etcdraft.StateFollower || r.Term != g.term || r.from != g.lead || r.from == g.h.id {
		return
	}
	g.visReport = max(g.visReport, r.Index)
}

// followerVisible is Status.LeaderVisible on a follower (g.mu held): see the section above.
func (g *group) followerVisible(committed uint64) uint64 {
	if g.visReport == 0 {
		return committed
	}
	idx := min(g.visReport, g.ls.WrittenIndex())
	if t, err := g.ls.Term(idx); err != nil || t != g.term {
		return committed
	}
	return max(idx, committed)
}
