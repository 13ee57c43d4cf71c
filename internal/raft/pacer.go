package raft

import (
	"sync"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

// Learner catch-up pacing (HostOptions.LearnerRate). A learner being added to a group is
// sent the whole log; unpaced, a move of a large partition takes a broker's disk and
// network from the producers of every other partition. The host sends the entries of
// MsgApps to learners through one token bucket: a message goes out at once while the
// bucket has tokens (it may take it below zero: a message larger than the bucket still
// goes, and the debt is paid before the next), else it waits in the pacer, in order, and
// the ticker releases what the refilled bucket allows. Nothing is dropped. What waits is
// bounded by raft's own inflight limits (MaxInflightMsgs, MaxInflightBytes per follower):
// raft counts a held message as sent, so it generates no more than that for the learner,
// and an append raft repeats while the first still waits replaces it.

type learnerPacer struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
	held   []heldApp
	// sent and delayed count the bytes paced: sent at once, or after waiting.
	sent, delayed uint64
}

type heldApp struct {
	to, group uint64
	m         *pb.Message
	size      int64
}

// appBytes is what a MsgApp costs in the bucket: its entries' payloads.
func appBytes(m *pb.Message) int64 {
	var n int64
	for _, e := range m.GetEntries() {
		n += int64(len(e.GetData()))
	}
	return n
}

func (h *Host) learnerRate() int64 {
	if h.opts.LearnerRate == nil {
		return 0
	}
	return h.opts.LearnerRate()
}

// refill adds the tokens rate earned since the last refill, up to one tick's worth (the
// ticker releases held messages once a tick, so the bucket never needs more).
func (p *learnerPacer) refill(now time.Time, rate int64, tick time.Duration) {
	burst := float64(rate) * tick.Seconds()
	if p.last.IsZero() {
		p.tokens = burst
	} else if d := now.Sub(p.last); d > 0 {
		p.tokens = min(burst, p.tokens+float64(rate)*d.Seconds())
	}
	p.last = now
}

// sendToLearner sends m, a MsgApp of group to learner to, now or once the bucket allows.
// A message never overtakes one of the same group to the same learner that waits: not even
// one without entries, which costs nothing (raft sends such an append, with the commit
// index, on a heartbeat response while the learner's window is full). It names the index
// after the held entries, which the learner does not have yet: it would reject it, and
// raft would fall back to probing the learner one append per heartbeat.
func (h *Host) sendToLearner(ob *outbox, to, group uint64, m *pb.Message) {
	rate := h.learnerRate()
	size := appBytes(m)
	p := &h.pacer
	p.mu.Lock()
	waiting := p.holds(to, group)
	if !waiting && (rate <= 0 || size == 0) {
		p.mu.Unlock()
		ob.addMsg(to, group, m)
		return
	}
	if rate > 0 {
		p.refill(h.clock.Now(), rate, h.opts.TickInterval)
		if len(p.held) == 0 && p.tokens > 0 {
			p.tokens -= float64(size)
			p.sent += uint64(size)
			p.mu.Unlock()
			ob.addMsg(to, group, m)
			return
		}
	}
	for i := range p.held {
		if a := &p.held[i]; a.to == to && a.group == group && a.m.GetIndex() == m.GetIndex() && a.m.GetLogTerm() == m.GetLogTerm() {
			// raft sent the same append again (a probe is repeated on every heartbeat
			// response while the first waits): the newer one, which carries the same
			// entries (or more) and a commit index as new, takes the older one's place.
			// One with fewer entries adds nothing the waiting one does not carry.
			if len(m.GetEntries()) >= len(a.m.GetEntries()) {
				a.m, a.size = m, size
			}
			p.mu.Unlock()
			return
		}
	}
	p.held = append(p.held, heldApp{to: to, group: group, m: m, size: size})
	p.mu.Unlock()
}

// holds reports whether a message of group to learner to waits. Caller holds p.mu.
func (p *learnerPacer) holds(to, group uint64) bool {
	for i := range p.held {
		if p.held[i].to == to && p.held[i].group == group {
			return true
		}
	}
	return false
}

// releaseLearnerApps sends the held messages the bucket now allows (all of them if pacing
// was turned off). The ticker calls it every tick. It sends before it lets go of the
// pacer: a worker that then finds nothing of the group waiting sends its next message
// straight to the transport, which must come after these.
func (h *Host) releaseLearnerApps() {
	p := &h.pacer
	rate := h.learnerRate()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.held) == 0 {
		return
	}
	n := len(p.held)
	if rate > 0 {
		p.refill(h.clock.Now(), rate, h.opts.TickInterval)
		n = 0
		for n < len(p.held) && p.tokens > 0 {
			p.tokens -= float64(p.held[n].size)
			n++
		}
	}
	// A message without entries costs nothing: it goes with what it waited behind.
	for n < len(p.held) && p.held[n].size == 0 {
		n++
	}
	out := p.held[:n]
	for _, a := range out {
		p.delayed += uint64(a.size)
	}
	if n > 0 && h.opts.Transport != nil {
		batches := map[uint64]*Batch{}
		var order []uint64
		for _, a := range out {
			b := batches[a.to]
			if b == nil {
				b = &Batch{From: h.id}
				batches[a.to] = b
				order = append(order, a.to)
			}
			b.Messages = append(b.Messages, GroupMessage{Group: a.group, Msg: a.m})
		}
		for _, to := range order {
			h.opts.Transport.Send(to, batches[to])
		}
	}
	rest := copy(p.held, p.held[n:])
	clear(p.held[rest:])
	p.held = p.held[:rest]
}

// LearnerPacing reports the learner pacer's state: bytes of MsgApps to learners sent at
// once and sent after waiting, and the messages and bytes waiting now.
func (h *Host) LearnerPacing() (sent, delayed uint64, heldMsgs int, heldBytes int64) {
	p := &h.pacer
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.held {
		heldBytes += a.size
	}
	return p.sent, p.delayed, len(p.held), heldBytes
}
