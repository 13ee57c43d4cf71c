package raft

import (
	"slices"

	etcdraft "go.etcd.io/raft/v3"
)

// # Fast elections when a leader's process is gone
//
// Raft alone notices a dead leader only when its election timeout runs out: 10 to 20 ticks
// (1–2 s) without a message. When the transport knows more, that the leader's host refused
// a connection because nothing listens at its address any more (rpc.Transport.OnPeerGone:
// its process died and its kernel closed its sockets), waiting is wasted. PeerGone then
// makes each follower of every group that host led forget its leader (raft's ForgetLeader,
// so that it grants a pre-vote at once rather than honouring the dead leader's lease), and
// the remaining voters campaign in turn: the first at once, the next fastStagger ticks
// later, each again every fastRetry ticks while the group has no leader, for at most
// fastWindow election timeouts; then raft's own timeout is all that is left. Who goes first
// rotates with the group id, so the dead host's leaderships spread over the survivors.
//
// Nothing here can elect a leader raft would not: a campaign is a pre-vote, which a voter
// that still hears from its leader ignores (CheckQuorum's lease), and a voter with a longer
// log refuses, in which case the next in turn, maybe that voter, campaigns a little later.
// The turns keep two equal candidates from splitting the vote. A paused or partitioned
// leader is never reported gone (its port does not refuse), so the election timeout alone
// handles those, and nothing changes under load: a busy leader refuses no connection.

const (
	fastStagger = 3 // ticks between one voter's first campaign and the next one's
	fastRetry   = 4 // ticks between a voter's campaigns while there is no leader
	fastWindow  = 2 // election timeouts after which only raft's timeout is left
)

// fastElection is a follower's campaign schedule after its leader's host went away.
type fastElection struct {
	next, until uint64 // host ticks: the next campaign, and the end of the schedule
}

// PeerGone tells the host that peer host id's process is not running (see above): each
// group this host follows it in forgets it and starts the campaign schedule. It returns at
// once; the groups act at their next ready round.
func (h *Host) PeerGone(id uint64) {
	if id == h.id {
		return
	}
	h.mu.RLock()
	var led []*group
	for _, g := range h.list {
		if g.pubLead.Load() == id {
			led = append(led, g)
		}
	}
	h.mu.RUnlock()
	for _, g := range led {
		g.queueControl(func(rn *etcdraft.RawNode) {
			if rn != nil {
				g.startFastElection(rn, id)
			}
		})
	}
}

// startFastElection runs with g.mu held.
func (g *group) startFastElection(rn *etcdraft.RawNode, gone uint64) {
	st := rn.BasicStatus()
	if st.RaftState != etcdraft.StateFollower || st.Lead != gone || g.gated.Load() {
		return
	}
	rank, ok := g.campaignRank(gone)
	if !ok {
		return // a learner: it neither votes nor campaigns
	}
	_ = rn.ForgetLeader()
	now := g.h.tickNo.Load()
	g.fast = &fastElection{
		next:  now + uint64(rank*fastStagger),
		until: now + uint64(fastWindow*g.h.opts.ElectionTicks),
	}
	g.stepFastElection(rn)
}

// campaignRank is this replica's turn among the group's voters other than gone (0:
// first), rotated by the group id; ok is false when this replica is not a voter.
func (g *group) campaignRank(gone uint64) (rank int, ok bool) {
	var voters []uint64
	for _, c := range g.conf {
		for id := range c {
			if id != gone && !slices.Contains(voters, id) {
				voters = append(voters, id)
			}
		}
	}
	slices.Sort(voters)
	pos := slices.Index(voters, g.h.id)
	if pos < 0 {
		return 0, false
	}
	n := len(voters)
	return (pos - int(g.id%uint64(n)) + n) % n, true
}

// stepFastElection campaigns when the schedule says so, and ends the schedule once the
// group has a leader or the window is over. It runs with g.mu held, after the group's
// ticks.
func (g *group) stepFastElection(rn *etcdraft.RawNode) {
	st := rn.BasicStatus()
	now := g.h.tickNo.Load()
	if st.Lead != 0 || now > g.fast.until {
		g.fast = nil
		return
	}
	if now < g.fast.next {
		return
	}
	g.fast.next = now + fastRetry
	if g.h.Campaigning() && !g.gated.Load() {
		_ = rn.Campaign()
	}
}
