package raft

import (
	"fmt"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// urgentFlush reports whether queued records must be flushed without delay, whatever the
// write-caching policy: one persists a term or vote other than the persisted term and vote
// (an election waits on it), or carries a vote answer (a candidate waits on it).
func urgentFlush(recs []appendRec, term, vote uint64) bool {
	for _, r := range recs {
		if urgentRec(r, term, vote) {
			return true
		}
	}
	return false
}

// urgentRec reports whether an election waits on r: it persists a term or vote other than
// term and vote, or carries a vote answer.
func urgentRec(r appendRec, term, vote uint64) bool {
	if r.hs != nil && (r.hs.GetTerm() != term || r.hs.GetVote() != vote) {
		return true
	}
	for _, m := range r.responses {
		switch m.GetType() {
		case pb.MsgVoteResp, pb.MsgPreVoteResp:
			return true
		}
	}
	return false
}

// electionBacklogged reports whether more election writes wait for the flushers than
// HostOptions.ElectionBacklog. Then the ticker stops the election clocks of the replicas
// without a leader: a vote answer that waits longer than an election timeout in the queue
// arrives after its candidate gave up and campaigned again, at a new term, which is one
// more write for every voter. When tens of thousands of groups elected at once (a cold
// start of a large cluster), every group did that and none ever won. Paused, the
// candidates wait for the answers already queued, and the disk catches up.
func (h *Host) electionBacklogged() bool {
	return h.electionWrites.Load() >= int64(h.opts.ElectionBacklog)
}

// electionClockHeld reports whether g's election clock stands still for now: the host is
// backlogged (electionBacklogged), g has no leader and is not one, and it is not a
// priority group. The ticker and a group's own round both ask it.
func (g *group) electionClockHeld(backlogged bool) bool {
	return backlogged && g.state != etcdraft.StateLeader && g.lead == 0 && !g.priority
}

// delayFlush reports whether the group's write-caching policy holds its queued records
// back for now; it then arms a timer that queues the group again. Caller holds g.flushing.
func (h *Host) delayFlush(g *group) bool {
	if g.flushDelay == nil {
		return false
	}
	g.fMu.Lock()
	defer g.fMu.Unlock()
	if len(g.fRecs) == 0 {
		return false
	}
	if term, vote, _ := g.ls.HardState(); urgentFlush(g.fRecs, term, vote) {
		return false
	}
	wait := g.flushDelay(g.ls.Log().UnflushedBytes(), h.clock.Now().Sub(g.fSince))
	if wait <= 0 {
		return false
	}
	if !g.fTimer {
		g.fTimer = true
		h.clock.AfterFunc(wait, func() {
			g.fMu.Lock()
			g.fTimer = false
			g.fMu.Unlock()
			if !g.removed.Load() {
				schedule(&g.fsched, &h.flushQ, g)
			}
		})
	}
	return true
}

func (h *Host) flusher() {
	defer h.wg.Done()
	ob := newOutbox(h)
	var batch []*group
	for {
		batch = h.flushQ.pop(batch[:0], 64)
		if batch == nil {
			return
		}
		h.flushAll(batch, ob)
	}
}

// flushAll is one flusher round: it flushes the groups taken off the flush queue, then
// sends what the flushes released.
func (h *Host) flushAll(batch []*group, ob *outbox) {
	for _, g := range batch {
		h.flushGroup(g, ob)
		if finish(&g.fsched) {
			h.flushQ.push(g)
		}
	}
	ob.flush()
}

// flushGroup makes every queued append of g durable with one Flush, persists the newest
// HardState, then delivers the responses. One flusher at a time handles a group (fsched),
// so HardStates are persisted in order.
func (h *Host) flushGroup(g *group, ob *outbox) {
	g.flushing.Lock()
	defer g.flushing.Unlock()
	if h.delayFlush(g) {
		return
	}
	g.fMu.Lock()
	recs := g.fRecs
	g.fRecs = nil
	g.fMu.Unlock()
	var taken int64
	for _, r := range recs {
		if r.election {
			taken++
		}
	}
	h.electionWrites.Add(-taken)
	if len(recs) == 0 || g.removed.Load() {
		return
	}
	if h.opts.flushGate != nil {
		h.opts.flushGate(g.id)
	}
	var hs *pb.HardState
	for _, r := range recs {
		if r.hs != nil {
			hs = r.hs
		}
	}
	err := g.ls.Flush()
	h.flushes.Add(1)
	g.flushes.Add(1)
	h.appends.Add(uint64(len(recs)))
	if err == nil && hs != nil {
		err = g.ls.SetHardState(hs)
	}
	if err != nil {
		h.opts.Logger.Errorf("raft host %d: group %d: flush: %v", h.id, g.id, err)
		g.mu.Lock()
		g.shutdown(fmt.Errorf("raft: group %d failed: %w", g.id, err))
		g.mu.Unlock()
		return
	}
	for _, r := range recs {
		g.deliver(r.responses, ob)
	}
}

// deliver passes on the responses of a storage append once it is durable: those to other
// hosts to ob, the group's own back to its inbox.
func (g *group) deliver(responses []*pb.Message, ob *outbox) {
	var local []*pb.Message
	for _, m := range responses {
		if m.GetTo() == g.h.id {
			local = append(local, m)
		} else {
			ob.addMsg(m.GetTo(), g.id, m)
		}
	}
	if len(local) > 0 {
		g.inMu.Lock()
		g.inLocal = append(g.inLocal, local...)
		g.inMu.Unlock()
		g.h.enqueue(g)
	}
}
