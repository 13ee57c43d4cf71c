package partition

import (
	"time"
)

// The replicate window: the bytes of batches proposed but not yet committed, bounded so
// that producers wait for commits rather than grow Raft's in-memory log.

// maxInflightBytes is the partition's replicate window: the bytes of batches proposed but
// not yet committed. A producer beyond it waits (backpressure) instead of growing Raft's
// in-memory log without bound.
const maxInflightBytes = 64 << 20

// reserveWindow takes size bytes of the window, waiting (bounded) for commits to free
// room. A batch larger than the whole window gets it alone.
func (p *Partition) reserveWindow(size int64) bool {
	deadline := time.Now().Add(appendTimeout)
	for {
		p.mu.Lock()
		if p.inflightBytes == 0 || p.inflightBytes+size <= maxInflightBytes {
			p.inflightBytes += size
			p.mu.Unlock()
			return true
		}
		if p.closed {
			p.mu.Unlock()
			return false
		}
		ch := p.changed
		p.mu.Unlock()
		wait := time.Until(deadline)
		if wait <= 0 {
			return false
		}
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
	}
}

func (p *Partition) releaseWindow(size int64) {
	p.mu.Lock()
	p.inflightBytes -= size
	p.advanceLocked(func(*Boundaries) {}) // wake producers waiting for room
	p.mu.Unlock()
}

// trackInflight remembers an appended entry's size until it commits.
func (p *Partition) trackInflight(index uint64, size int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.bounds.IsLeader {
		p.inflightBytes -= size // leadership already ended: nothing will release it
		return
	}
	p.inflight = append(p.inflight, inflightEntry{index, size})
	// Appends finish in index order but are recorded by concurrent producers: keep the
	// list sorted (an insertion from the back).
	for i := len(p.inflight) - 1; i > 0 && p.inflight[i-1].index > p.inflight[i].index; i-- {
		p.inflight[i-1], p.inflight[i] = p.inflight[i], p.inflight[i-1]
	}
}

type inflightEntry struct {
	index uint64
	size  int64
}

// releaseCommittedLocked frees the window of entries at or below committed, or of all of
// them when this replica no longer leads.
func (p *Partition) releaseCommittedLocked(committed uint64, leader bool) {
	n := 0
	for n < len(p.inflight) && (!leader || p.inflight[n].index <= committed) {
		p.inflightBytes -= p.inflight[n].size
		n++
	}
	if n > 0 {
		p.inflight = append(p.inflight[:0], p.inflight[n:]...)
	}
}
