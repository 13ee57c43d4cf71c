package partition

import (
	"time"

	"github.com/cairn-io/cairn/internal/raft"
)

// The in-sync replicas and min.insync.replicas (DESIGN.md §3): which voters hold the
// leader's log, for admission (an acks=all produce needs enough of them before it is
// appended) and completion (enough of them must hold the batch before it is acknowledged).

// DefaultReplicaLagMax is replica.lag.time.max.ms's default: a voter that has not held the
// leader's whole log for this long drops out of the ISR (Options.ReplicaLagMax sets it).
const DefaultReplicaLagMax = 30 * time.Second

// heldBy is the last index a voter holds in the sense of DESIGN.md §3: flushed, or
// written where write caching is on.
func heldBy(pp raft.PeerProgress, writeCaching bool) uint64 {
	if writeCaching {
		return pp.Written
	}
	return pp.Match
}

// noteCaughtUpLocked records, from a refresh that produced b, which voters hold the
// leader's whole log (ending at leaderEnd) at now. It runs after p.progress and p.voters
// took the refreshed values and before p.bounds does, so a change of leadership can be
// told from the previous boundaries: every voter then starts with the full lag window,
// since the old leader's view of them says nothing about this leadership. A voter counts
// as caught up only while its broker is heard from: a dead follower of an idle partition
// still holds the whole log, and would otherwise never leave the ISR (as in Kafka, where
// a follower that stops fetching leaves it replica.lag.time.max.ms after its last fetch).
// A voter whose held index moved since the last refresh was just heard from; only one
// that did not costs a look at the host's liveness table (a lock), which under load is
// rare.
func (p *Partition) noteCaughtUpLocked(b Boundaries, leaderEnd uint64, now time.Time) {
	if !b.IsLeader || p.bounds.LeaderEpoch != b.LeaderEpoch || !p.bounds.IsLeader {
		clear(p.caughtUp)
		clear(p.heldSeen)
	}
	// A voter that holds the log end of the last refresh was caught up until entries past it
	// were appended, which is no earlier than that refresh and may be now: an idle
	// partition refreshes on no event, so its followers' times would otherwise be as old as
	// the idle spell, and the first batch after it would find them all out of the ISR. (In
	// Kafka, likewise, a fetch that reaches the log end of the previous fetch counts.)
	caughtUpTo := min(p.leaderEnd, leaderEnd)
	p.leaderEnd = leaderEnd
	if !b.IsLeader {
		return
	}
	writeCaching := p.cfg.Load().WriteCaching
	for _, v := range p.voters {
		held := heldBy(p.progress[v], writeCaching)
		moved := held > p.heldSeen[v]
		if moved {
			p.heldSeen[v] = held
		}
		switch _, ok := p.caughtUp[v]; {
		case !ok || (held >= caughtUpTo && moved):
			p.caughtUp[v] = now
		case held >= caughtUpTo:
			// It held the log end of the last refresh as long as its broker was heard
			// from; between refreshes (an idle spell) that is the last time it was heard.
			heard := p.host.PeerHeardAt(v)
			if heard.After(now) {
				heard = now
			}
			if heard.After(p.caughtUp[v]) {
				p.caughtUp[v] = heard
			}
		}
	}
}

// ISR returns the in-sync replicas (DESIGN.md §3), in Raft ids, the leader first; on a
// replica that does not lead it is empty.
func (p *Partition) ISR() []uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.isrLocked(p.now())
}

func (p *Partition) isrLocked(now time.Time) []uint64 {
	return p.appendISRLocked(nil, now)
}

// LeadershipView is what the broker's leadership round publishes of this replica, read
// under one lock: whether it leads, its term and log start, and, when it leads, the ISR
// appended to isr (a buffer the caller reuses: the round walks every replica of the
// broker, tens of thousands, every few seconds).
func (p *Partition) LeadershipView(isr []uint64) (leads bool, epoch int32, logStart int64, isrOut []uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.bounds.IsLeader {
		return false, p.bounds.LeaderEpoch, p.bounds.LogStart, isr
	}
	return true, p.bounds.LeaderEpoch, p.bounds.LogStart, p.appendISRLocked(isr, p.now())
}

// appendISRLocked appends the ISR (isrLocked) to isr.
func (p *Partition) appendISRLocked(isr []uint64, now time.Time) []uint64 {
	if !p.bounds.IsLeader {
		return isr
	}
	isr = append(isr, p.self)
	writeCaching := p.cfg.Load().WriteCaching
	for _, v := range p.voters {
		if v == p.self {
			continue
		}
		held := heldBy(p.progress[v], writeCaching)
		// Caught up within the window; or holding the whole log now, which an idle
		// partition's followers do without any event refreshing caughtUp: they were
		// caught up whenever their broker was heard from, and a stopped one leaves the
		// window after it was last heard.
		if now.Sub(p.caughtUp[v]) <= p.lagMax || (held >= p.leaderEnd && now.Sub(p.host.PeerHeardAt(v)) <= p.lagMax) {
			isr = append(isr, v)
		}
	}
	return isr
}

// InsyncState summarizes replication health for metrics (DESIGN.md §3): the ISR size,
// the effective min.insync.replicas and the voter count. ok is false on a replica that
// does not lead (only the leader knows the ISR).
func (p *Partition) InsyncState() (isr, minISR, voters int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.bounds.IsLeader {
		return 0, 0, len(p.voters), false
	}
	return len(p.isrLocked(p.now())), p.minInsyncLocked(), len(p.voters), true
}

// minInsyncLocked is the effective min.insync.replicas: the topic's value, capped by the number
// of voters (DESIGN.md §3).
func (p *Partition) minInsyncLocked() int {
	return max(1, min(p.cfg.Load().MinInsyncReplicas, len(p.voters)))
}

// holdersLocked counts the voters that hold the entry at index: flushed, or written under
// write caching.
func (p *Partition) holdersLocked(index uint64) int {
	writeCaching := p.cfg.Load().WriteCaching
	n := 0
	for _, v := range p.voters {
		if heldBy(p.progress[v], writeCaching) >= index {
			n++
		}
	}
	return n
}
