package raft

import "testing"

// listingHost is a host with follower groups 1..n whose leader is host 2, at term 3 and
// commit 7, registered as the ticker sees them; it sends nothing.
func listingHost(t *testing.T, n int) (*Host, []*group) {
	t.Helper()
	h := newHost(HostOptions{NodeID: 1}, wallClock{})
	var gs []*group
	for id := uint64(1); id <= uint64(n); id++ {
		g := &group{id: id, h: h, activePos: -1}
		g.pubLead.Store(2)
		g.pubTerm.Store(3)
		g.pubCommit.Store(7)
		h.groups[id] = g
		h.quiet.mu.Lock()
		h.quiet.activate(g)
		h.quiet.mu.Unlock()
		gs = append(gs, g)
	}
	return h, gs
}

func listingOf(ids ...uint64) []QuiescedGroup {
	var qs []QuiescedGroup
	for _, id := range ids {
		qs = append(qs, QuiescedGroup{Group: id, Term: 3, Commit: 7})
	}
	return qs
}

func activeCount(h *Host) int {
	h.quiet.mu.Lock()
	defer h.quiet.mu.Unlock()
	return len(h.quiet.active)
}

// A peer of an earlier release lists its quiesced groups every listEvery ticks with no
// header, and sends empty heartbeats between: each listing is taken whole, the empty
// heartbeats change nothing, and when its listings stop the groups tick again.
func TestListingOfAnEarlierReleasePeer(t *testing.T) {
	h, gs := listingHost(t, 3)
	h.onHeartbeat(2, &HostHeartbeat{Quiesced: listingOf(1, 2)})
	if gs[0].quietFrom.Load() != 2 || gs[1].quietFrom.Load() != 2 || gs[2].quietFrom.Load() != 0 || activeCount(h) != 1 {
		t.Fatalf("after the listing of 1 and 2: quiet on %d %d %d, %d active", gs[0].quietFrom.Load(), gs[1].quietFrom.Load(), gs[2].quietFrom.Load(), activeCount(h))
	}
	h.onHeartbeat(2, &HostHeartbeat{}) // between listings
	if gs[0].quietFrom.Load() != 2 {
		t.Fatal("an empty heartbeat of an earlier release woke a listed group")
	}
	h.onHeartbeat(2, &HostHeartbeat{Quiesced: listingOf(2)}) // the leader woke group 1
	if gs[0].quietFrom.Load() != 0 || gs[1].quietFrom.Load() != 2 || activeCount(h) != 2 {
		t.Fatalf("a listing without group 1 left it quiet (%d), or %d active", gs[0].quietFrom.Load(), activeCount(h))
	}
	for range quietSlack + 1 {
		h.tickNo.Add(1)
		h.quiet.mu.Lock()
		h.quiet.expireLocked(h.tickNo.Load(), nil)
		h.quiet.mu.Unlock()
	}
	if gs[1].quietFrom.Load() != 0 || activeCount(h) != 3 {
		t.Fatalf("no listing for %d ticks, and group 2 is still quiet", quietSlack+1)
	}

	// This host, to that peer: a full listing every listEvery ticks, never confirmed.
	h.quiet.mu.Lock()
	defer h.quiet.mu.Unlock()
	l := h.quiet.ledFor(2)
	l.groups[9] = &group{id: 9, qTerm: 4, qCommit: 11}
	fulls := 0
	for now := uint64(10); now < 10+4*listEvery; now++ {
		hb := h.quiet.heartbeatsLocked([]uint64{2}, now)[0]
		if hb.Listed() == 1 {
			fulls++
		}
	}
	if fulls != 4 {
		t.Fatalf("%d full listings in %d ticks to a peer that sends no header, want 4", fulls, 4*listEvery)
	}
}

// A current peer's listing is sent whole until the peer echoes its generation, then only
// confirmed; a change is sent whole again, and a listing generation that is not the one
// this host took confirms nothing.
func TestListingByGeneration(t *testing.T) {
	h, gs := listingHost(t, 2)
	qt := &h.quiet
	qt.mu.Lock()
	l := qt.ledFor(3)
	l.groups[9] = &group{id: 9, qTerm: 4, qCommit: 11}
	l.gen = qt.nextGen()
	qt.mu.Unlock()
	h.onHeartbeat(3, &HostHeartbeat{Quiesced: []QuiescedGroup{listingHeader{gen: 5}.entry()}})
	send := func(now uint64) *HostHeartbeat {
		qt.mu.Lock()
		defer qt.mu.Unlock()
		return qt.heartbeatsLocked([]uint64{3}, now)[0]
	}
	if send(10).Listed() != 1 {
		t.Fatal("the first heartbeat to a peer that holds another generation does not list")
	}
	if send(11).Listed() != 0 {
		t.Fatal("listed again within listEvery ticks")
	}
	qt.mu.Lock()
	gen := l.gen
	qt.mu.Unlock()
	h.onHeartbeat(3, &HostHeartbeat{Quiesced: []QuiescedGroup{listingHeader{gen: 5, echo: gen}.entry()}})
	for now := uint64(12); now < 20; now++ {
		if send(now).Listed() != 0 {
			t.Fatalf("tick %d: listed again after the peer echoed the generation", now)
		}
	}
	qt.mu.Lock()
	qt.wakeLocked(l.groups[9]) // not quiet here: only the listing changes
	delete(l.groups, 9)
	l.gen = qt.nextGen()
	qt.mu.Unlock()
	if hb := send(20); hb.Listed() != 0 || !func() bool { hd, _, _ := splitListing(hb.Quiesced); return hd.full }() {
		t.Fatal("a changed (now empty) listing is not sent whole")
	}

	// The follower's side: a full listing at generation 40, then confirmations.
	full := append([]QuiescedGroup{listingHeader{gen: 40, full: true}.entry()}, listingOf(1, 2)...)
	h.tickNo.Store(100)
	h.onHeartbeat(2, &HostHeartbeat{Quiesced: full})
	if gs[0].quietFrom.Load() != 2 || gs[1].quietFrom.Load() != 2 {
		t.Fatal("a full listing did not quiet its groups")
	}
	h.tickNo.Store(100 + quietSlack)
	h.onHeartbeat(2, &HostHeartbeat{Quiesced: []QuiescedGroup{listingHeader{gen: 41}.entry()}}) // another generation
	h.tickNo.Store(101 + quietSlack)
	qt.mu.Lock()
	qt.expireLocked(h.tickNo.Load(), nil)
	qt.mu.Unlock()
	if gs[0].quietFrom.Load() != 0 {
		t.Fatal("a heartbeat of another generation confirmed the listing")
	}
	h.onHeartbeat(2, &HostHeartbeat{Quiesced: full})
	h.tickNo.Store(101 + 2*quietSlack)
	h.onHeartbeat(2, &HostHeartbeat{Quiesced: []QuiescedGroup{listingHeader{gen: 40}.entry()}})
	h.tickNo.Store(102 + 2*quietSlack)
	qt.mu.Lock()
	qt.expireLocked(h.tickNo.Load(), nil)
	qt.mu.Unlock()
	if gs[0].quietFrom.Load() != 2 || activeCount(h) != 0 {
		t.Fatal("a confirmation of the listing's generation did not keep its groups quiet")
	}
	// A woken group makes this host echo nothing, so that the peer sends its listing again.
	qt.mu.Lock()
	qt.wakeLocked(gs[0])
	hb := qt.heartbeatsLocked([]uint64{2}, 200)[0]
	qt.mu.Unlock()
	if hd, _, _ := splitListing(hb.Quiesced); hd.echo != 0 {
		t.Fatalf("echo %d after a group of the listing woke, want 0", hd.echo)
	}
}

// A peer's heartbeat is wire data: whatever its header and listing say, taking it and
// answering it never panics, and every group is either active or quiet on exactly one side.
func FuzzOnHeartbeat(f *testing.F) {
	f.Add(uint64(headerGroup), uint64(5), uint64(3), uint64(1), uint64(3), uint64(7), uint64(2), uint64(3), uint64(7))
	f.Add(uint64(1), uint64(3), uint64(7), uint64(2), uint64(3), uint64(6), uint64(headerGroup), uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, g1, t1, c1, g2, t2, c2, g3, t3, c3 uint64) {
		h, gs := listingHost(t, 3)
		qs := []QuiescedGroup{{g1, t1, c1}, {g2, t2, c2}, {g3, t3, c3}}
		for i := range len(qs) + 1 {
			h.onHeartbeat(2, &HostHeartbeat{Quiesced: qs[:i]})
			h.onHeartbeat(3, &HostHeartbeat{Quiesced: qs[i:]})
		}
		h.quiet.mu.Lock()
		defer h.quiet.mu.Unlock()
		h.quiet.expireLocked(h.tickNo.Load()+quietSlack+1, map[uint64]bool{2: true})
		h.quiet.heartbeatsLocked([]uint64{2, 3}, 10)
		for _, g := range gs {
			quiet := g.quietFrom.Load() != 0
			if active := g.activePos >= 0; active == quiet {
				t.Fatalf("group %d: active %v, quiet on %d", g.id, active, g.quietFrom.Load())
			}
		}
	})
}
