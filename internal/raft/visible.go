package raft

import (
	etcdraft "go.etcd.io/raft/v3"
)

// # The leader's last visible index, told to its followers
//
// A follower that serves reads (KIP-392) must never serve above what its leader may serve:
// committed, or majority replicated where write caching is on (DESIGN.md §1). raft's
// commit reaches followers on its own (capped at each one's match); the majority-replicated
// index lives above the library, on the leader only. So a leader whose group shares its
// visible index (GroupConfig.ShareVisible, asked once per round: the partition says yes
// under write caching) tells each follower its max(majority replicated, committed) in a
// VisibleReport, and only while that is above its commit: at or below it, the follower's
// own commit is the bound, so a strict group, or a flushed idle one, sends none.
//
// Reports cost no traffic of their own. A leader's round ends by reporting to each peer
// that the round already sends something (the outbox holds a batch for it) and that was
// last told another value in this term; a peer the round sends nothing hears at the next
// round that does, at the latest with the next raft heartbeat, so a follower's bound may
// trail its leader's by up to a heartbeat interval after the last write of a burst. A
// heartbeat also makes the leader forget what it told that peer, so a lost report is
// repeated with it while the visible index is above the commit. In a round, a peer's
// reports of all groups are coalesced (one per group, the largest), and raftrpc sends them
// as a message of a type of their own in the same frame and write as the raft batch, so a
// broker that does not know the type drops them and raft's own traffic is untouched.
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

// reportVisible, at the end of a leader's round, tells each peer that the round sends
// something the leader's visible index, if it is above the commit and the peer was last told
// another (g.mu held).
func (g *group) reportVisible(ob *outbox) {
	if g.shareVisible == nil || g.state != etcdraft.StateLeader || len(g.peerIDs) == 0 {
		return // nothing shared, or nobody to tell (a sole voter): no work added per round
	}
	if !g.shareVisible() {
		return
	}
	commit := g.rn.BasicStatus().GetCommit()
	vis := max(g.majority, commit)
	if vis == commit {
		return // raft brings the followers the commit, their bound
	}
	if g.visSent == nil {
		g.visSent = make(map[uint64]uint64, len(g.peerIDs))
	}
	for _, p := range g.peerIDs {
		if g.visSent[p] >= vis || !ob.sending(p) {
			continue
		}
		g.visSent[p] = vis
		ob.addVisible(p, VisibleReport{Group: g.id, Term: g.term, Index: vis})
	}
}

// heartbeatSent makes the leader forget what it last told peer to, so that the round's end
// tells it again: the report may have been lost (g.mu held; a no-op for a group that shares
// nothing, whose visSent is nil).
func (g *group) heartbeatSent(to uint64) { delete(g.visSent, to) }

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
