package raft

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	etcdraft "go.etcd.io/raft/v3"
)

// workQueue is a FIFO of groups with a closed flag.
type workQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []*group // queued from items[head]
	head   int
	closed bool
}

func (q *workQueue) init() { q.cond = sync.NewCond(&q.mu) }

// push queues g at the back, or a priority group (GroupConfig.Priority) at the front.
func (q *workQueue) push(g *group) {
	q.mu.Lock()
	switch {
	case !g.priority:
		q.items = append(q.items, g)
	case q.head > 0:
		q.head--
		q.items[q.head] = g
	default:
		q.items = slices.Insert(q.items, 0, g)
	}
	q.mu.Unlock()
	q.cond.Signal()
}

// pop takes up to n groups, blocking while the queue is empty; nil once closed.
func (q *workQueue) pop(dst []*group, n int) []*group {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == q.head && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return nil
	}
	return q.takeLocked(dst, n)
}

// take is pop without blocking: it takes up to n groups, none if the queue is empty.
func (q *workQueue) take(dst []*group, n int) []*group {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.takeLocked(dst, n)
}

// takeLocked takes from the head without moving what stays: with tens of thousands of
// groups queued (every group of a large host has work after a tick), shifting the rest on
// every take cost a copy of the whole queue per take. The taken part is reclaimed once it
// is half the slice.
func (q *workQueue) takeLocked(dst []*group, n int) []*group {
	n = min(n, len(q.items)-q.head)
	dst = append(dst, q.items[q.head:q.head+n]...)
	clear(q.items[q.head : q.head+n])
	q.head += n
	switch {
	case q.head == len(q.items):
		q.items, q.head = q.items[:0], 0
	case q.head >= 256 && 2*q.head >= len(q.items):
		rest := copy(q.items, q.items[q.head:])
		clear(q.items[rest:])
		q.items, q.head = q.items[:rest], 0
	}
	return dst
}

// len is how many groups are queued.
func (q *workQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head
}

func (q *workQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// schedule marks a group as having work in the queue guarded by state; it is pushed
// unless it already is queued or running (then it runs once more).
func schedule(state *atomic.Int32, q *workQueue, g *group) {
	for {
		switch s := state.Load(); s {
		case 0:
			if state.CompareAndSwap(0, 1) {
				q.push(g)
				return
			}
		case 1:
			if state.CompareAndSwap(1, 2) {
				return
			}
		default:
			return
		}
	}
}

// finish ends a run; it reports whether the group must run again (and is then still
// marked queued).
func finish(state *atomic.Int32) bool {
	if state.CompareAndSwap(1, 0) {
		return false
	}
	state.Store(1)
	return true
}

func (h *Host) enqueue(g *group) { schedule(&g.sched, &h.readyQ, g) }

func (h *Host) worker() {
	defer h.wg.Done()
	ob := newOutbox(h)
	var batch []*group
	for {
		batch = h.readyQ.pop(batch[:0], 16)
		if batch == nil {
			return
		}
		h.processAll(batch, ob)
	}
}

// processAll is one worker round: it runs the groups taken off the ready queue, sends
// their traffic, and only then lets them go. A group released before its round's traffic
// is sent could run again on another worker, whose round may send first: a follower would
// then get an append whose predecessor has not arrived yet and reject it, and raft would
// fall back to probing it: one append per round trip, and the entries in flight sent again.
func (h *Host) processAll(batch []*group, ob *outbox) {
	for _, g := range batch {
		g.again = h.process(g, ob)
	}
	ob.flush()
	for _, g := range batch {
		if g.again {
			g.sched.Store(1) // still ours: run it again later
			h.readyQ.push(g)
		} else if finish(&g.sched) {
			h.readyQ.push(g)
		}
	}
}

// ticker ticks every group once per TickInterval. A group that is neither queued nor
// running is ticked in place and queued only if the tick produced work (a heartbeat, a
// campaign), so an idle follower costs a lock, an increment and HasReady per tick; a
// queued or running one gets its tick at its next round, after its messages.
func (h *Host) ticker() {
	defer h.wg.Done()
	t := time.NewTicker(h.opts.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		h.tickOnce()
	}
}

// tickOnce is one ticker round: every group that is not quiet is ticked, and every peer
// host is sent its coalesced heartbeat. Quiet groups are not visited at all: the round
// costs what the active groups and the peers cost, however many groups are idle.
func (h *Host) tickOnce() {
	now := h.tickNo.Load()
	silent := h.silentPeers(now)
	h.quiet.mu.Lock()
	h.quiet.expireLocked(now, silent)
	// A copy, so that wakes and quiesces need not wait for the round.
	list := append(h.tickList[:0], h.quiet.active...)
	h.quiet.mu.Unlock()
	backlogged := h.electionBacklogged()
	for _, g := range list {
		if g.solo.Load() || g.gated.Load() {
			continue // nothing to tick for; a gated joiner must not campaign (campaign.go)
		}
		if g.sched.Load() != 0 {
			// Queued already: the tick waits for the group's round, which steps what is
			// queued for it first (process), so that a timeout never outruns messages that
			// arrived before it and only wait for a worker. A quiet group is not ticked at
			// all, as below.
			if g.awake() {
				g.ticks.Add(1)
				h.enqueue(g)
			}
		} else if g.mu.TryLock() {
			work := false
			if g.gone == nil && g.awake() {
				still := false
				if g.state == etcdraft.StateLeader {
					still = g.tryQuiesce(false)
				} else if g.electionClockHeld(backlogged) {
					still = true // its election clock waits for the flushers (electionBacklogged)
				}
				if !still {
					g.rn.Tick()
					if g.fast != nil {
						g.stepFastElection(g.rn)
					}
					work = g.rn.HasReady()
				}
			}
			g.mu.Unlock()
			if work {
				h.enqueue(g)
			}
		} else {
			g.ticks.Add(1)
			h.enqueue(g)
		}
	}
	clear(list)
	h.tickList = list[:0]
	h.sendHeartbeats(now)
	h.releaseLearnerApps()
	h.tickNo.Add(1)
	h.ticks.Add(1)
}
