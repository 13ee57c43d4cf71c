package raft

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/quorum"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
)

// # Quiescence and coalesced liveness
//
// A leader whose group has been idle for quiesceTicks ticks (nothing pending, the log
// committed and applied, the Match of every follower whose host was heard from recently at
// the last index, those hosts a quorum, no leadership transfer) quiesces it: the ticker
// stops ticking the group, so raft sends no per-group heartbeats for it. Instead the host
// sends every peer host one HostHeartbeat per tick, whose listing names (group, term,
// commit) for the quiesced groups it leads that the peer is a member of; the listing itself
// goes only when it changed (listing.go), and the heartbeat in between confirms it.
//
// A follower that finds itself listed by the host it follows, at its own term and commit,
// stops ticking the group while the heartbeats keep confirming the listing; if they stop
// for quietSlack ticks (the leader's host died or is cut off) or a new listing leaves the
// group out (the leader woke it) it ticks again and raft's election timer takes over. A
// listing that does not match (another term or leader, a commit behind) leaves the
// follower ticking, and it learns from the listing what the leader's heartbeat would have
// told it (adoptListing); at worst it times out, pre-votes, and the pre-vote wakes the
// leader, whose heartbeats then bring the follower back.
//
// Any proposal, control call, conf change, local flush response or raft message other than
// a same-term heartbeat (or heartbeat response) wakes the group on either side.
//
// A member whose host is silent does not keep a group awake while the members heard from
// are a quorum: the leader quiesces without it, and stays quiesced when a member's host
// goes silent, waking (so that CheckQuorum runs again and the leader steps down) only when
// the hosts silent for an election timeout leave it without a quorum. A follower's host
// that dies or restarts thus costs its peers nothing per idle group: before, every
// quiesced group with a member there woke and heartbeat it each tick, and a broker with
// tens of thousands of replicas, restarting, met a flood of them while it opened its own.
// Back, the follower finds its listing matching (nothing was written meanwhile), or not
// (it is behind): then it takes the leader from the listing, and its answer makes the
// leader's raft send what it lacks (adoptListing); were that answer lost, it would time
// out and pre-vote, which wakes the leader too.
//
// Quiescence only withholds ticks: raft's messages stay the source of truth, and nothing
// is committed differently.

const (
	// quiesceTicks is how long a leader's group must stay idle before it quiesces (its
	// heartbeats meanwhile carry the commit index to the followers).
	quiesceTicks = 3
	// listEvery is how often (in ticks) at most a host sends a peer its full listing
	// (while the peer has not taken the current one, or, of an earlier release, always);
	// the heartbeat itself (liveness) goes every tick.
	listEvery = 2
	// quietSlack is how many ticks a follower stays quiet after the last heartbeat that
	// confirmed its listing (the hosts' tickers are not aligned, and a heartbeat may be
	// lost); the same bound says which peers count as live for quiescing.
	quietSlack = 2*listEvery + 1
)

// HostHeartbeat is the coalesced liveness message a host sends each peer host once per
// tick: the groups the sender leads, has quiesced, and the receiver is a member of.
type HostHeartbeat struct {
	Quiesced []QuiescedGroup
}

// QuiescedGroup says that the sender leads Group in Term and has quiesced it at Commit
// (its last index, replicated to every member).
type QuiescedGroup struct {
	Group, Term, Commit uint64
}

// peerState is what a host knows about a peer host's liveness.
type peerState struct {
	seen  atomic.Uint64 // the local tick of the last batch received from the peer
	heard atomic.Int64  // when that batch arrived, on the host's clock (UnixNano)
}

type peerTable struct {
	clock Clock // the host's: when a peer first named was "heard" (a grace period)
	mu    sync.Mutex
	peers map[uint64]*peerState
	list  []uint64
}

func (t *peerTable) get(id uint64, now uint64) *peerState {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.peers[id]
	if p == nil {
		if t.peers == nil {
			t.peers = map[uint64]*peerState{}
		}
		p = &peerState{}
		p.seen.Store(now) // a grace period: unknown peers are not dead at once
		p.heard.Store(t.clock.Now().UnixNano())
		t.peers[id] = p
		t.list = append(t.list, id)
	}
	return p
}

func (t *peerTable) ids() []uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]uint64(nil), t.list...)
}

// notePeers registers the group's members as peers of the host (called when the
// configuration changes).
func (g *group) notePeers() {
	h := g.h
	now := h.tickNo.Load()
	ps := make([]uint64, 0, len(g.conf[0])+len(g.conf[1])+len(g.learners))
	add := func(id uint64) {
		if id != h.id && !slices.Contains(ps, id) {
			ps = append(ps, id)
			h.peers.get(id, now)
		}
	}
	for _, c := range g.conf {
		for id := range c {
			add(id)
		}
	}
	for _, id := range g.learners {
		add(id)
	}
	g.peerIDs = ps
}

// peerLive reports whether a batch from peer arrived within within ticks.
// PeerLive reports whether this host heard from peer host id within an election timeout
// (any message counts; this host itself is always live).
func (h *Host) PeerLive(id uint64) bool {
	return id == h.id || h.peerLive(id, uint64(h.opts.ElectionTicks))
}

func (h *Host) peerLive(id uint64, within uint64) bool {
	p := h.peers.get(id, h.tickNo.Load())
	return h.tickNo.Load()-p.seen.Load() <= within
}

// PeerHeardAt is when this host last received a batch from peer host id, on the host's
// clock (now for itself; when it was first named for a peer never heard from). Unlike
// PeerLive, which counts ticks for election-timeout decisions, it serves windows measured
// in time, such as replica.lag.time.max.ms: an idle partition's leader judges a follower
// by when its broker was last heard, since no per-group event tells it.
func (h *Host) PeerHeardAt(id uint64) time.Time {
	if id == h.id {
		return h.clock.Now()
	}
	return time.Unix(0, h.peers.get(id, h.tickNo.Load()).heard.Load())
}

// silentPeers returns the peers not heard from for an election timeout (nil if none).
func (h *Host) silentPeers(now uint64) map[uint64]bool {
	var silent map[uint64]bool
	h.peers.mu.Lock()
	defer h.peers.mu.Unlock()
	for id, p := range h.peers.peers {
		if now-p.seen.Load() > uint64(h.opts.ElectionTicks) {
			if silent == nil {
				silent = map[uint64]bool{}
			}
			silent[id] = true
		}
	}
	return silent
}

// publish exposes the replica's role for Step's lock-free check of heartbeat listings,
// and tells the group's owner (OnChange) when its status may have moved.
func (g *group) publish() {
	lead := uint64(0)
	if g.state == etcdraft.StateFollower {
		lead = g.lead
	}
	commit := g.rn.BasicStatus().GetCommit()
	g.pubLead.Store(lead)
	g.pubLeading.Store(g.state == etcdraft.StateLeader)
	g.pubTerm.Store(g.term)
	g.pubCommit.Store(commit)
	if g.onChange == nil {
		return
	}
	// A replica's status is these fields; when none moved (a heartbeat of an awake leader,
	// every tick, and its answers), its owner's refresh would find nothing new. A broker
	// restarting among thousands of awake leaders spent 40% of its CPU finding that on the
	// followers; at 50,000 partitions the leaders' own refreshes, three per tick per awake
	// leader, flooded the scheduler with owner goroutines until the ticker ran a few times
	// a second and the elections never settled. A leader's key adds its followers'
	// progress, which only grows within a term, as a sum. Time alone needs no refresh: the
	// ISR is computed when it is read, from the progress and the lag window (package
	// partition).
	key := publishedStatus{state: g.state, term: g.term, lead: g.lead, commit: commit, applied: g.applied,
		written: g.ls.WrittenIndex(), flushed: g.ls.FlushedIndex(), visible: g.visReport, conf: g.confSeq,
		gated: g.gated.Load()}
	if g.state == etcdraft.StateLeader {
		key.majority, key.ownFirst = g.majority, g.ownFirst
		g.rn.WithProgress(func(id uint64, _ etcdraft.ProgressType, pr tracker.Progress) {
			key.progress += pr.Match + g.written[id]
		})
	}
	if g.published == key {
		return
	}
	g.published = key
	g.onChange()
}

// publishedStatus is what a replica's last OnChange reflected (publish).
type publishedStatus struct {
	state                                                        etcdraft.StateType
	term, lead, commit, applied, written, flushed, visible, conf uint64
	majority, ownFirst, progress                                 uint64 // a leader's
	gated                                                        bool
}

// awake reports whether the group is quiet on neither side: not quiesced here as its
// leader, and not quiet on a leader's listing as its follower. Only an awake group ticks.
func (g *group) awake() bool { return !g.quiet.Load() && g.quietFrom.Load() == 0 }

// wake un-quiesces the group on both sides (called with g.mu held).
func (g *group) wake() {
	g.idle = 0
	if g.awake() {
		return
	}
	qt := &g.h.quiet
	qt.mu.Lock()
	qt.wakeLocked(g)
	qt.mu.Unlock()
}

// wakes reports whether an incoming raft message must wake the group.
func (g *group) wakes(m *pb.Message) bool {
	switch m.GetType() {
	case pb.MsgHeartbeat, pb.MsgHeartbeatResp:
		return m.GetTerm() != g.term
	}
	return true
}

// tryQuiesce is called by the ticker with g.mu held on a replica that is not quiet. It
// reports whether the group (led here) has now quiesced.
//
// inRound: the group's own round asks, after a tick it applied (process), rather than
// the ticker; its mark in the ready queue then does not count as work (canQuiesce). A host whose groups wait longer than a tick for a worker ticks them only in their
// rounds (tickOnce), and each such tick heartbeats, whose answers queue the group again:
// asked by the ticker alone, a leader of such a host never found itself idle, and at
// 50,000 partitions every group stayed awake, tens of thousands of them queued for good.
func (g *group) tryQuiesce(inRound bool) bool {
	if !g.canQuiesce(inRound) {
		g.idle = 0
		return false
	}
	g.idle++
	if g.idle < quiesceTicks {
		return false
	}
	g.qTerm = g.term
	g.qCommit = g.rn.BasicStatus().GetCommit()
	g.qPeers = append(g.qPeers[:0], g.peerIDs...)
	g.qConf = quorum.JointConfig{maps.Clone(g.conf[0]), maps.Clone(g.conf[1])}
	qt := &g.h.quiet
	qt.mu.Lock()
	qt.quiesceLocked(g)
	qt.mu.Unlock()
	return true
}

func (g *group) canQuiesce(inRound bool) bool {
	if g.state != etcdraft.StateLeader || len(g.waiting) > 0 || len(g.props) > 0 || len(g.peerIDs) == 0 {
		return false
	}
	// In its own round the group is marked queued (1), or queued again (2) by something
	// that came meanwhile: a tick (counted in ticks) or input (counted below) holds it
	// awake, a tick the round has applied already does not.
	if (g.sched.Load() != 0 && !inRound) || g.fsched.Load() != 0 || g.ticks.Load() != 0 {
		return false
	}
	g.inMu.Lock()
	pending := len(g.inMsgs) + len(g.inLocal) + len(g.inWritten) + len(g.inVisible) + len(g.inProps) + len(g.inCtl)
	g.inMu.Unlock()
	if pending > 0 || g.rn.HasReady() {
		return false
	}
	bs := g.rn.BasicStatus()
	last := g.ls.WrittenIndex()
	if bs.LeadTransferee != 0 || bs.GetCommit() != last || g.applied != last || g.ls.FlushedIndex() != last {
		return false
	}
	// Every member whose host is heard from holds the last index; one whose host is silent
	// is left to catch up when it is back (adoptListing), as long as the members heard from
	// are a quorum: a quiesced leader runs no CheckQuorum, so it must not quiesce without
	// one. A learner is no voter: it never campaigns, so back from silence it could not
	// wake a quiesced leader by a pre-vote, and it must be heard and caught up like before.
	if !quorumHeard(g.conf, g.h.id, func(id uint64) bool { return g.h.peerLive(id, quietSlack) }) {
		return false
	}
	for _, id := range g.learners {
		if !g.h.peerLive(id, quietSlack) {
			return false
		}
	}
	ok := true
	g.rn.WithProgress(func(id uint64, _ etcdraft.ProgressType, pr tracker.Progress) {
		if pr.Match != last && (id == g.h.id || g.h.peerLive(id, quietSlack)) {
			ok = false
		}
	})
	return ok
}

// quorumHeard reports whether the voters of conf that heard (self always does) are a
// majority of each of its halves.
func quorumHeard(conf quorum.JointConfig, self uint64, heard func(id uint64) bool) bool {
	for _, c := range conf {
		if len(c) == 0 {
			continue
		}
		n := 0
		for id := range c {
			if id == self || heard(id) {
				n++
			}
		}
		if n <= len(c)/2 {
			return false
		}
	}
	return true
}

// behindListing reports whether a follower that knows leader lead (0: none) and commit is
// behind only in what it knows of a listing by from at listed: adoptListing's question.
func behindListing(lead, commit, from, listed uint64) bool {
	return (lead == 0 && commit <= listed) || (lead == from && commit < listed)
}

// adoptListing lets a follower that does not match a listing of from's (the group is not
// quiet here) learn from it what a quiesced leader's heartbeat would have told it, since
// that leader sends none.
//
// A follower behind only in what it knows (a replica just restarted: it has not heard
// from the leader yet, and its commit index was persisted lazily) takes the leader and the
// commit. The listing proves that from led the group in q.Term and had committed q.Commit,
// the last index of its log. The follower takes the commit only at that same term and
// only if its own log holds an entry of q.Term at q.Commit: by raft's log matching, its
// log up to there is the leader's, so committing it is what the leader's own heartbeat
// (which carries min(match, commit)) would do. Without it, each such follower times out,
// pre-votes and wakes its leader, and a host restarting with thousands of replicas wakes
// thousands of groups on its peers at once.
//
// A follower behind in its log, or in an earlier term (a replica that was down while the
// group wrote, or elected a new leader), takes only the leader: a heartbeat of q.Term that
// commits nothing new. Its answer reaches the quiesced leader, whose raft sends the
// entries the follower lacks (a heartbeat response from a follower behind does that), and
// that exchange wakes the group until the follower has caught up. Without it, the
// follower would wait out an election timeout and pre-vote first.
func (g *group) adoptListing(from uint64, q QuiescedGroup) {
	g.queueControl(func(rn *etcdraft.RawNode) {
		if rn == nil {
			return
		}
		bs := rn.BasicStatus()
		if bs.RaftState == etcdraft.StateLeader || bs.GetTerm() > q.Term || g.gated.Load() {
			return // a gated joiner hears from its leader only past its join floor (campaign.go)
		}
		commit := bs.GetCommit()
		if behindListing(bs.Lead, commit, from, q.Commit) && bs.GetTerm() == q.Term {
			if t, err := g.ls.Term(q.Commit); err == nil && t == q.Term {
				commit = q.Commit
			}
		}
		if commit == bs.GetCommit() && bs.Lead == from && bs.GetTerm() == q.Term && commit >= q.Commit {
			return // it matches already: nothing to learn
		}
		_ = rn.Step(&pb.Message{Type: pb.MsgHeartbeat.Enum(), From: new(from), To: new(g.h.id), Term: new(q.Term), Commit: new(commit)})
		// Now it matches the listing, or will once caught up: have it sent again, to go
		// quiet on it.
		qt := &g.h.quiet
		qt.mu.Lock()
		qt.staleLocked(from)
		qt.mu.Unlock()
	})
}
