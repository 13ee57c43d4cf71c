package raft

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"

	etcdraft "go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/quorum"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"
)

const maxReadyPerRun = 8

// process runs one round of a group: inputs in, Readys out. It reports whether the group
// still has work.
func (h *Host) process(g *group, ob *outbox) bool {
	g.inMu.Lock()
	msgs, local, written, visible, props, ctl := g.inMsgs, g.inLocal, g.inWritten, g.inVisible, g.inProps, g.inCtl
	g.inMsgs, g.inLocal, g.inWritten, g.inVisible, g.inProps, g.inCtl = nil, nil, nil, nil, nil, nil
	g.inMu.Unlock()

	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone != nil {
		for _, p := range props {
			p.fail(g.gone)
		}
		for _, f := range ctl {
			f(nil)
		}
		return false
	}
	defer g.publish()
	rn := g.rn
	wake := len(local) > 0 || len(props) > 0 || len(ctl) > 0
	for _, m := range msgs {
		if !wake && g.wakes(m) {
			wake = true
		}
	}
	if wake {
		g.wake()
	}
	for _, m := range local {
		_ = rn.Step(m)
	}
	for _, m := range msgs {
		if h.ignoresInbound(m) {
			continue
		}
		if g.gated.Load() {
			if g.gateDropsInbound(m) {
				continue
			}
			if err := g.noteJoinFloor(m); err != nil {
				g.fail(err)
				return false
			}
		}
		switch m.GetType() {
		case pb.MsgSnap:
			g.admitSnapshot(m)
		case pb.MsgApp:
			if g.refusesLegacyStart(m) {
				continue
			}
		}
		_ = rn.Step(m) // errors: a message of a peer not (or no longer) in the group
	}
	for _, f := range ctl {
		f(rn)
	}
	// The ticks that came while the group waited for this round go in after its messages,
	// and count as one: a vote answer or a heartbeat that arrived in time is not outrun by
	// a timeout that only ran out while the group sat in the queue (a candidate would
	// campaign again, at a new term, with the answers that elect it in hand), and a burst
	// of them does not make a leader elected by those answers step down at once
	// (CheckQuorum) before a follower could answer it. So a host whose groups wait longer
	// than a tick for a worker runs their clocks slower, rather than time out elections
	// and leaders because it is slow itself.
	n := min(g.ticks.Swap(0), 1)
	if g.gated.Load() {
		n = 0 // a gated joiner is not ticked (campaign.go)
	} else if g.electionClockHeld(h.electionBacklogged()) {
		n = 0 // as in tickOnce
	}
	ticked := n > 0
	for ; n > 0; n-- {
		rn.Tick()
	}
	if g.fast != nil {
		g.stepFastElection(rn)
	}
	g.refreshStatus()
	for _, r := range written {
		g.onWritten(r)
	}
	for _, r := range visible {
		g.onVisible(r)
	}
	for _, p := range props {
		if g.state != etcdraft.StateLeader || (p.inTerm != 0 && p.inTerm != g.term) {
			p.fail(ErrNotLeader)
			continue
		}
		if err := rn.Propose(p.data); err != nil {
			if errors.Is(err, etcdraft.ErrProposalDropped) {
				err = ErrNotLeader
			}
			p.fail(err)
			continue
		}
		g.waiting = append(g.waiting, p)
	}
	for i := 0; rn.HasReady(); i++ {
		if i == maxReadyPerRun {
			return true
		}
		if err := h.handleReady(g, ob); err != nil {
			g.fail(err)
			return false
		}
	}
	if g.needMaj {
		g.updateMajority()
	}
	g.reportVisible(ob)
	if ticked && g.state == etcdraft.StateLeader {
		g.tryQuiesce(true) // a leader ticked here may never be idle at the ticker (tryQuiesce)
	}
	return false
}

// fail stops the group after a storage error.
func (g *group) fail(err error) {
	g.h.opts.Logger.Errorf("raft host %d: group %d: %v", g.h.id, g.id, err)
	g.shutdown(fmt.Errorf("raft: group %d failed: %w", g.id, err))
}

// onWritten records a follower's written report if it is for this leader's term.
func (g *group) onWritten(r fromWritten) {
	if g.state != etcdraft.StateLeader || r.Term != g.term || r.from == g.h.id {
		return
	}
	if r.Index > g.written[r.from] {
		g.written[r.from] = r.Index
		g.needMaj = true
	}
}

type fromWritten struct {
	from uint64
	WrittenReport
}

func (h *Host) handleReady(g *group, ob *outbox) error {
	rn := g.rn
	rd := rn.Ready()
	g.refreshStatus()
	var steps []*pb.Message
	for _, m := range rd.Messages {
		switch m.GetTo() {
		case etcdraft.LocalAppendThread:
			if err := h.handleAppend(g, m, ob); err != nil {
				return err
			}
		case etcdraft.LocalApplyThread:
			if err := g.handleApply(m); err != nil {
				return err
			}
			steps = append(steps, m.GetResponses()...)
		default:
			if h.dropsOutbound(m) || g.gateDropsOutbound(m) {
				continue
			}
			if m.GetType() == pb.MsgApp && slices.Contains(g.learners, m.GetTo()) {
				h.sendToLearner(ob, m.GetTo(), g.id, m)
				continue
			}
			ob.addMsg(m.GetTo(), g.id, m)
			if m.GetType() == pb.MsgHeartbeat {
				g.heartbeatSent(m.GetTo())
			}
		}
	}
	for _, m := range steps {
		if m.GetTo() == h.id {
			_ = rn.Step(m)
		} else {
			ob.addMsg(m.GetTo(), g.id, m)
		}
	}
	return nil
}

func (h *Host) handleAppend(g *group, m *pb.Message, ob *outbox) error {
	if snap := m.GetSnapshot(); snap != nil && !etcdraft.IsEmptySnap(snap) {
		if err := g.ls.ApplySnapshot(snap); err != nil {
			return err
		}
		// The entries at or below the snapshot are committed, but this replica cannot
		// tell whether they are the proposed ones: fail them (never a false success).
		g.truncateProps(snap.GetMetadata().GetIndex()+1, nil)
		g.noteConf() // raft restored the snapshot's configuration
		if err := g.passJoinFloor(snap.GetMetadata().GetIndex()); err != nil {
			return err
		}
	}
	if ents := m.GetEntries(); len(ents) > 0 {
		g.truncateProps(ents[0].GetIndex(), ents)
		conv, err := g.ls.appendEntries(ents, true)
		if err != nil {
			return err
		}
		if g.state == etcdraft.StateLeader {
			g.noteOwnAppends(ents)
		}
		for _, e := range ents {
			if len(e.GetData()) == 0 {
				continue
			}
			// The leader's new data entries are the waiting proposals, in order. Our
			// raft (third_party/etcd-raft) hands back the proposal's own Data, so the
			// match is usually one pointer compare; bytes.Equal stays for any path
			// that copies it.
			if len(g.waiting) == 0 || e.GetTerm() != g.term || !sameBytes(e.GetData(), g.waiting[0].data) {
				continue
			}
			p := g.waiting[0]
			g.waiting[0] = nil
			g.waiting = g.waiting[1:]
			if len(conv) > 0 && e.GetIndex() >= conv[0].Index && e.GetIndex()-conv[0].Index < uint64(len(conv)) {
				p.baseOffset.Store(conv[e.GetIndex()-conv[0].Index].BaseOffset)
			}
			p.index.Store(e.GetIndex())
			p.term.Store(e.GetTerm())
			p.data = nil // raft and the log have it now; waiters keep the handle for long
			p.reach(StageAppended)
			g.props = append(g.props, p)
		}
		g.needMaj = true
	}
	for _, r := range m.GetResponses() {
		if r.GetType() == pb.MsgAppResp && !r.GetReject() && r.GetTo() != h.id {
			ob.addWritten(r.GetTo(), WrittenReport{Group: g.id, Term: r.GetTerm(), Index: r.GetIndex()})
		}
	}
	if m.Term == nil && len(m.GetEntries()) == 0 && m.GetSnapshot() == nil && g.deliverUnqueued(m.GetResponses(), ob) {
		return nil
	}
	rec := appendRec{responses: m.GetResponses()}
	if m.Term != nil {
		rec.hs = &pb.HardState{Term: new(m.GetTerm()), Vote: new(m.GetVote()), Commit: new(m.GetCommit())}
	}
	if term, vote, _ := g.ls.HardState(); urgentRec(rec, term, vote) {
		rec.election = true
		h.electionWrites.Add(1)
	}
	g.fMu.Lock()
	if len(g.fRecs) == 0 {
		g.fSince = h.clock.Now()
	}
	g.fRecs = append(g.fRecs, rec)
	g.fMu.Unlock()
	schedule(&g.fsched, &h.flushQ, g)
	return nil
}

// deliverUnqueued delivers at once the responses of a MsgStorageAppend that persists
// nothing (no entries, no snapshot, no HardState: a pre-vote answer, a rejected append's
// hint), rather than queue them behind every other group's flush, provided nothing of the
// group awaits its flusher: a response must never overtake a flush it depends on (an
// append's acknowledgement of entries still unflushed). A pre-vote answer queued behind
// thousands of hard-state writes after a broker restart took longer than an election
// timeout, and elections never completed. Caller holds g.mu.
func (g *group) deliverUnqueued(responses []*pb.Message, ob *outbox) bool {
	g.fMu.Lock()
	idle := len(g.fRecs) == 0 && g.fsched.Load() == 0
	g.fMu.Unlock()
	if !idle {
		return false
	}
	g.deliver(responses, ob)
	return true
}

// truncateProps fails the appended proposals the log is about to replace: those at or
// above from whose entry in ents (the entries replacing the log from from on) has another
// term or is missing.
func (g *group) truncateProps(from uint64, ents []*pb.Entry) {
	keep := g.props[:0]
	for _, p := range g.props {
		idx := p.Index()
		if idx >= from {
			off := idx - from
			if off >= uint64(len(ents)) || ents[off].GetTerm() != p.Term() {
				p.fail(ErrTruncated)
				continue
			}
		}
		keep = append(keep, p)
	}
	clear(g.props[len(keep):])
	g.props = keep
}

func (g *group) handleApply(m *pb.Message) error {
	ents := m.GetEntries()
	if len(ents) == 0 {
		return nil
	}
	for _, e := range ents {
		var cc pb.ConfChangeI
		switch e.GetType() {
		case pb.EntryConfChange:
			c := &pb.ConfChange{}
			if err := proto.Unmarshal(e.GetData(), c); err != nil {
				return err
			}
			cc = c
		case pb.EntryConfChangeV2:
			c := &pb.ConfChangeV2{}
			if err := proto.Unmarshal(e.GetData(), c); err != nil {
				return err
			}
			cc = c
		default:
			continue
		}
		cs := g.rn.ApplyConfChange(cc)
		if err := g.ls.SetConfState(e.GetIndex(), cs); err != nil {
			return err
		}
		g.noteConf()
		g.needMaj = true
	}
	if g.apply != nil {
		g.apply(g.id, ents)
	}
	first, last := ents[0].GetIndex(), ents[len(ents)-1].GetIndex()
	g.applied = last
	if err := g.passJoinFloor(last); err != nil {
		return err
	}
	g.trimCache()
	n := 0
	for _, p := range g.props {
		idx := p.Index()
		if idx > last {
			break
		}
		if idx >= first && ents[idx-first].GetTerm() == p.Term() {
			p.reach(StageCommitted)
		} else {
			p.fail(ErrTruncated)
		}
		n++
	}
	g.props = append(g.props[:0], g.props[n:]...)
	return nil
}

// trimCache drops the cached entries nothing will read again. raft reads an entry after
// appending it twice at most: to apply it here once it commits, and, on a leader, to send it
// to a live follower that lacks it. Both readers are served from memory that way; a
// single-replica group, which has no followers, used to read every entry back from its
// segment files to apply it.
func (g *group) trimCache() {
	keep := g.applied
	if g.state == etcdraft.StateLeader {
		keep = min(keep, g.replicated)
	}
	g.ls.cache.trimBelow(keep + 1)
}

// updateMajority recomputes the majority-replicated index (leader only), trims the entry
// cache to what live followers still lack, and moves the proposals the boundary covers to
// StageReplicated.
func (g *group) updateMajority() {
	g.needMaj = false
	if g.state != etcdraft.StateLeader {
		return
	}
	own := g.ls.WrittenIndex()
	self := g.h.id
	clear(g.acked)
	// Entries every live follower acknowledged durably are no longer read for replication.
	// A follower whose host is not heard from does not hold entries in memory: when it
	// comes back it is fed from the files.
	minMatch := uint64(math.MaxUint64)
	g.rn.WithProgress(func(id uint64, _ etcdraft.ProgressType, pr tracker.Progress) {
		g.acked[id] = quorum.Index(voterWritten(id, self, own, pr.Match, g.written))
		if id != self && g.h.PeerLive(id) {
			minMatch = min(minMatch, pr.Match)
		}
	})
	g.replicated = minMatch
	g.trimCache()
	g.majority = majorityReplicated(g.conf, g.acked, g.majority, own, g.term, g.ls)
	g.signalReplicated(max(g.majority, g.rn.BasicStatus().GetCommit()))
}

// noteOwnAppends records, on a leader, its term's first entry and the configuration
// changes it appends (Status.PendingConf).
func (g *group) noteOwnAppends(ents []*pb.Entry) {
	for _, e := range ents {
		if e.GetTerm() != g.term {
			continue
		}
		if g.ownFirst == 0 {
			g.ownFirst = e.GetIndex()
		}
		if t := e.GetType(); t == pb.EntryConfChange || t == pb.EntryConfChangeV2 {
			g.confProposed = max(g.confProposed, e.GetIndex())
		}
	}
}

// refusesLegacyStart reports whether m would give a joining replica (no configuration,
// empty log) a log from index 1 that does not open with configuration entries: that of a
// group bootstrapped by an earlier release (Host.JoinableLog false), whose initial voters
// are not in it. Applying it would leave the replica a configuration without them, in
// which, once promoted, it could elect itself. It waits instead for a leader that sends a
// snapshot (the planner shows it as a learner that does not catch up).
func (g *group) refusesLegacyStart(m *pb.Message) bool {
	ents := m.GetEntries()
	if m.GetIndex() != 0 || len(ents) == 0 || ents[0].GetType() != pb.EntryNormal {
		return false
	}
	if len(g.conf[0]) > 0 || len(g.conf[1]) > 0 || len(g.learners) > 0 || g.ls.WrittenIndex() > 0 {
		return false
	}
	g.h.opts.Logger.Warningf("raft host %d: group %d: refusing a log from index 1 without its configuration (a group of an earlier release): waiting for a snapshot", g.h.id, g.id)
	return true
}

// admitSnapshot makes this replica a learner in the configuration of a snapshot that
// does not name it. A snapshot here marks the leader's log prefix boundary, and carries
// the configuration in force there; a replica added after it (a learner joining once
// retention took the log's start) is not in it, and raft would refuse the snapshot
// forever. The leader sends one only to a member of its configuration, and the entries
// after the boundary hold the change that added this replica (re-adding a learner is a
// no-op), so once they are applied the configuration is exactly the leader's.
func (g *group) admitSnapshot(m *pb.Message) {
	md := m.GetSnapshot().GetMetadata()
	cs := md.GetConfState()
	if cs == nil {
		return
	}
	for _, ids := range [][]uint64{cs.GetVoters(), cs.GetLearners(), cs.GetVotersOutgoing()} {
		if slices.Contains(ids, g.h.id) {
			return
		}
	}
	cs = proto.Clone(cs).(*pb.ConfState)
	cs.Learners = append(cs.Learners, g.h.id)
	md.ConfState = cs
}

// sameBytes reports whether a and b hold the same bytes, answering without reading them
// when they are the same slice.
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b) {
		return true
	}
	return bytes.Equal(a, b)
}
