package raft

import (
	"maps"
	"math"
	"sync"
	"time"

	"go.etcd.io/raft/v3/quorum"
)

// # Listings that are sent only when they change
//
// A host keeps, for each peer host, the listing of the quiesced groups it leads that the
// peer is a member of, and a generation that moves whenever that listing changes. Every
// heartbeat carries a header (listingHeader): the listing's generation, whether the full
// listing follows, and, echoed back, the generation of the peer's listing this host last
// took. The full listing goes only while the peer's echo is not the current generation
// (at most every listEvery ticks); otherwise the heartbeat is its header alone. On the
// follower's side a header naming the generation it holds confirms every group of that
// listing at once, so neither host spends anything per idle group per tick: the ticker
// walks only the groups that are not quiet (quietTable.active), and a listing is read
// only when it changed.
//
// A follower whose group woke on its own (a message from anyone but a same-term
// heartbeat) echoes nothing for that peer until the next full listing, which decides
// again for every group in it. A peer of an earlier release sends no header: its listings,
// every listEvery ticks, are each taken as full, and it is sent the full listing every
// listEvery ticks (the header's entry names no group it has, so it ignores it).

// headerGroup is the group id of a listing's header entry: never a group's (the
// controller hands out ids below it), so a host of an earlier release skips it.
const headerGroup = math.MaxUint64

// listingHeader is what a heartbeat's header entry says.
type listingHeader struct {
	gen  uint64 // the generation of the sender's listing for the receiver
	full bool   // the listing follows in this heartbeat
	echo uint64 // the generation of the receiver's listing the sender holds (0: none)
}

func (l listingHeader) entry() QuiescedGroup {
	c := l.echo << 1
	if l.full {
		c |= 1
	}
	return QuiescedGroup{Group: headerGroup, Term: l.gen, Commit: c}
}

// splitListing separates a heartbeat's header (ok false: a peer of an earlier release)
// from its groups.
func splitListing(qs []QuiescedGroup) (h listingHeader, groups []QuiescedGroup, ok bool) {
	if len(qs) == 0 || qs[0].Group != headerGroup {
		return listingHeader{}, qs, false
	}
	return listingHeader{gen: qs[0].Term, full: qs[0].Commit&1 == 1, echo: qs[0].Commit >> 1}, qs[1:], true
}

// Listed is the number of groups a heartbeat lists (its header is not one).
func (hb *HostHeartbeat) Listed() int { return len(hb.Groups()) }

// Groups are the groups a heartbeat lists, without its header.
func (hb *HostHeartbeat) Groups() []QuiescedGroup {
	_, groups, _ := splitListing(hb.Quiesced)
	return groups
}

// quietTable is a host's record of which groups are quiet, on both sides, and of the
// listings that say so. Lock order: h.mu, then g.mu, then quietTable.mu.
type quietTable struct {
	mu sync.Mutex
	// active are the groups the ticker walks: every group but the quiet ones (quiesced
	// here as leader, or quiet on a peer's listing). group.activePos is the index.
	active []*group
	// led is, by peer, the quiesced groups led here that the peer is a member of.
	led map[uint64]*ledListing
	// followed is, by peer, the groups quiet here on that peer's listing.
	followed map[uint64]*followedListing
	gen      uint64          // the last generation handed out; from the clock, so a restart never reuses one
	mark     uint64          // counts full listings taken, to find the groups one left out
	silent   map[uint64]bool // the silent peer hosts expireLocked last checked against
}

type ledListing struct {
	gen      uint64
	groups   map[uint64]*group
	echoed   uint64 // the generation the peer last said it holds
	current  bool   // the peer has sent a header: it holds listings by generation
	lastFull uint64 // the tick of the last full listing sent
}

type followedListing struct {
	gen    uint64   // the generation of the listing taken (0: none, or an earlier release's)
	seen   uint64   // the local tick of the last heartbeat that confirmed it
	groups []*group // quiet on it when taken; one may have woken since (quietFrom says)
	stale  bool     // a group of it woke here: echo nothing until the next full listing
}

func (qt *quietTable) init(now time.Time) {
	qt.led, qt.followed = map[uint64]*ledListing{}, map[uint64]*followedListing{}
	qt.gen = uint64(now.UnixNano())
}

func (qt *quietTable) nextGen() uint64 {
	qt.gen++
	return qt.gen
}

func (qt *quietTable) ledFor(peer uint64) *ledListing {
	l := qt.led[peer]
	if l == nil {
		l = &ledListing{gen: qt.nextGen(), groups: map[uint64]*group{}}
		qt.led[peer] = l
	}
	return l
}

func (qt *quietTable) followedFor(peer uint64) *followedListing {
	f := qt.followed[peer]
	if f == nil {
		f = &followedListing{}
		qt.followed[peer] = f
	}
	return f
}

func (qt *quietTable) activate(g *group) {
	if g.activePos >= 0 || g.removed.Load() {
		return
	}
	g.activePos = len(qt.active)
	qt.active = append(qt.active, g)
}

func (qt *quietTable) deactivate(g *group) {
	i := g.activePos
	if i < 0 {
		return
	}
	last := qt.active[len(qt.active)-1]
	qt.active[i], last.activePos = last, i
	qt.active[len(qt.active)-1] = nil
	qt.active = qt.active[:len(qt.active)-1]
	g.activePos = -1
}

// quiesceLocked records that g, led here, has quiesced (g.qPeers and the rest are set).
func (qt *quietTable) quiesceLocked(g *group) {
	for _, p := range g.qPeers {
		l := qt.ledFor(p)
		l.groups[g.id] = g
		l.gen = qt.nextGen()
	}
	g.quiet.Store(true)
	qt.deactivate(g)
}

// wakeLocked makes g tick again, on whichever side it was quiet.
func (qt *quietTable) wakeLocked(g *group) {
	if g.quiet.Load() {
		for _, p := range g.qPeers {
			if l := qt.led[p]; l != nil {
				delete(l.groups, g.id)
				l.gen = qt.nextGen()
			}
		}
		g.quiet.Store(false)
	}
	if p := g.quietFrom.Load(); p != 0 {
		qt.staleLocked(p)
		g.quietFrom.Store(0)
	}
	qt.activate(g)
}

// staleLocked makes this host ask peer for its full listing again (it echoes nothing until
// one arrives); staleAllLocked asks every peer.
func (qt *quietTable) staleLocked(peer uint64) {
	if f := qt.followed[peer]; f != nil {
		f.stale = true
	}
}

func (qt *quietTable) staleAllLocked() {
	for _, f := range qt.followed {
		f.stale = true
	}
}

// removeLocked forgets g (RemoveGroup).
func (qt *quietTable) removeLocked(g *group) {
	qt.wakeLocked(g)
	qt.deactivate(g)
}

// expireLocked wakes, at the start of a tick, the groups that must tick again: those quiet
// on the listing of a peer not confirmed for quietSlack ticks (the peer woke them, died
// or is cut off), and the quiesced groups led here whose members on silent hosts leave
// them without a quorum (so CheckQuorum runs again), or that have a learner there (which
// never campaigns, so it is heartbeat until heard again). The second is checked only when
// the set of silent hosts changed: a group that quiesced since passed the same check with
// a stricter idea of silence (canQuiesce).
func (qt *quietTable) expireLocked(now uint64, silent map[uint64]bool) {
	for p, f := range qt.followed {
		if len(f.groups) == 0 || now-f.seen <= quietSlack {
			continue
		}
		for _, g := range f.groups {
			if g.quietFrom.Load() == p {
				g.quietFrom.Store(0)
				qt.activate(g)
			}
		}
		clear(f.groups)
		f.groups, f.gen, f.stale = f.groups[:0], 0, false
	}
	if maps.Equal(silent, qt.silent) {
		return
	}
	qt.silent = silent
	for p := range silent {
		l := qt.led[p]
		if l == nil {
			continue
		}
		for _, g := range l.groups {
			if !isVoter(g.qConf, p) || !quorumHeard(g.qConf, 0, func(id uint64) bool { return !silent[id] }) {
				qt.wakeLocked(g)
			}
		}
	}
}

// onHeartbeat handles a peer host's coalesced heartbeat (h.mu read-locked).
func (h *Host) onHeartbeat(from uint64, hb *HostHeartbeat) {
	now := h.tickNo.Load()
	hdr, listed, current := splitListing(hb.Quiesced)
	qt := &h.quiet
	qt.mu.Lock()
	defer qt.mu.Unlock()
	if l := qt.ledFor(from); current {
		l.current, l.echoed = true, hdr.echo
	} else {
		l.current = false // an earlier release's, maybe after a downgrade
	}
	f := qt.followedFor(from)
	switch {
	case current && !hdr.full:
		if hdr.gen == f.gen && f.gen != 0 {
			f.seen = now // every group still quiet on it stays so; a woken one is not
		}
		return
	case !current && len(listed) == 0:
		return // an earlier release's heartbeat between its listings
	}
	qt.mark++
	kept := make([]*group, 0, len(listed))
	for _, q := range listed {
		g := h.groups[q.Group]
		if g == nil || g.removed.Load() {
			continue
		}
		lead, term, commit := g.pubLead.Load(), g.pubTerm.Load(), g.pubCommit.Load()
		if lead == from && term == q.Term && commit == q.Commit && !g.quiet.Load() {
			g.listMark = qt.mark
			if g.quietFrom.Load() != from {
				g.quietFrom.Store(from)
				qt.deactivate(g)
			}
			kept = append(kept, g)
			continue
		}
		if term <= q.Term && g.adoptAsked.Swap(q.Commit) != q.Commit {
			g.adoptListing(from, q)
		}
	}
	for _, g := range f.groups {
		if g.quietFrom.Load() == from && g.listMark != qt.mark {
			g.quietFrom.Store(0)
			qt.activate(g)
		}
	}
	f.groups, f.gen, f.seen, f.stale = kept, hdr.gen, now, false
}

// heartbeatsLocked builds every known peer host's heartbeat for this tick.
func (qt *quietTable) heartbeatsLocked(peers []uint64, now uint64) []*HostHeartbeat {
	out := make([]*HostHeartbeat, len(peers))
	for i, p := range peers {
		l := qt.ledFor(p)
		hdr := listingHeader{gen: l.gen}
		if f := qt.followed[p]; f != nil && !f.stale {
			hdr.echo = f.gen
		}
		hdr.full = (!l.current || l.echoed != l.gen) && now-l.lastFull >= listEvery
		n := 1
		if hdr.full {
			n += len(l.groups)
			l.lastFull = now
		}
		list := make([]QuiescedGroup, 0, n)
		list = append(list, hdr.entry())
		if hdr.full {
			for _, g := range l.groups {
				list = append(list, QuiescedGroup{Group: g.id, Term: g.qTerm, Commit: g.qCommit})
			}
		}
		out[i] = &HostHeartbeat{Quiesced: list}
	}
	return out
}

// sendHeartbeats sends every known peer host its coalesced heartbeat for this tick.
func (h *Host) sendHeartbeats(now uint64) {
	if h.opts.Transport == nil {
		return
	}
	peers := h.peers.ids()
	h.quiet.mu.Lock()
	hbs := h.quiet.heartbeatsLocked(peers, now)
	h.quiet.mu.Unlock()
	for i, id := range peers {
		h.opts.Transport.Send(id, &Batch{From: h.id, Heartbeat: hbs[i]})
	}
}

// isVoter reports whether id votes in either half of conf.
func isVoter(conf quorum.JointConfig, id uint64) bool {
	_, in0 := conf[0][id]
	_, in1 := conf[1][id]
	return in0 || in1
}
