package partition

import (
	"time"
)

// The in-sync replicas and min.insync.replicas (DESIGN.md §3): which voters hold the
// leader's log, for admission (an acks=all produce needs enough of them before it is
// appended) and completion (enough of them must hold the batch before it is acknowledged).

// replicaLagMax is replica.lag.time.max.ms: a voter that has not held the leader's whole
// log for this long drops out of the ISR.
const replicaLagMax = 30 * time.Second

// ISR returns the in-sync replicas (DESIGN.md §3), in Raft ids, the leader first; on a
// replica that does not lead it is empty.
func (p *Partition) ISR() []uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.isrLocked(time.Now())
}

func (p *Partition) isrLocked(now time.Time) []uint64 {
	if !p.bounds.IsLeader {
		return nil
	}
	isr := []uint64{p.self}
	writeCaching := p.cfg.Load().WriteCaching
	for _, v := range p.voters {
		if v == p.self {
			continue
		}
		pp := p.progress[v]
		held := pp.Match
		if writeCaching {
			held = pp.Written
		}
		// Caught up within the window; or holding the whole log now, which an idle
		// partition's followers do without any event refreshing caughtUp (as long as
		// their broker is heard from).
		if now.Sub(p.caughtUp[v]) <= replicaLagMax || (held >= p.leaderEnd && p.host.PeerLive(v)) {
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
	return len(p.isrLocked(time.Now())), p.minInsyncLocked(), len(p.voters), true
}

// minInsync is the effective min.insync.replicas: the topic's value, capped by the number
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
		pp := p.progress[v]
		held := pp.Match
		if writeCaching {
			held = pp.Written
		}
		if held >= index {
			n++
		}
	}
	return n
}
