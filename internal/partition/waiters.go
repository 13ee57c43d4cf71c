package partition

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/raft"
)

// Waiting for a boundary or a proposal's stage. Every wait ends when the partition
// closes or the caller's context does, so no produce or fetch outlives its replica.

// WaitLeader blocks until this replica leads its group, or ctx ends.
func (p *Partition) WaitLeader(ctx context.Context) error {
	return p.waitFor(ctx, func(b *Boundaries) bool { return b.IsLeader })
}

// waitFor blocks until cond holds for the boundaries, the partition closes, or ctx ends.
func (p *Partition) waitFor(ctx context.Context, cond func(*Boundaries) bool) error {
	for {
		p.mu.Lock()
		if cond(&p.bounds) {
			p.mu.Unlock()
			return nil
		}
		if p.closed {
			p.mu.Unlock()
			return errPartitionClosed
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitVisible blocks until last visible reaches end, the partition closes, or ctx ends; on
// a leader, also until it serves reads (Boundaries.Serving), so that a coordinator that
// replays its partition on election reads it at once.
func (p *Partition) WaitVisible(ctx context.Context, end int64) error {
	return p.waitFor(ctx, func(b *Boundaries) bool { return b.LastVisible >= end && (b.Serving || !b.IsLeader) })
}

// waitAcked waits until prop (whose records end at end) satisfies acks=-1: committed, or
// majority replicated under write caching, and held by min.insync.replicas voters that
// span min.insync.racks declared racks. A batch a new leader truncates fails here, at
// prop.Wait, before any holder is counted: whatever racks held it, it is never
// acknowledged.
func (p *Partition) waitAcked(ctx context.Context, prop *raft.Proposal, end int64) (ProduceResult, bool) {
	stage := raft.StageCommitted
	if p.cfg.Load().WriteCaching {
		stage = raft.StageReplicated
	}
	if err := prop.Wait(ctx, stage); err != nil {
		return p.proposalFailed(err), false
	}
	if p.Boundaries().LastVisible < end {
		p.refresh() // the boundaries show the batch before the client hears of it
	}
	return p.waitHolders(ctx, prop.Index(), "the batch was appended but fewer replicas than min.insync.replicas hold it")
}

// waitAppended waits (bounded) until the leader appended prop. If it failed, the producer
// table may name a batch the log does not hold: it is rebuilt from the log before the next
// produce.
func (p *Partition) waitAppended(prop *raft.Proposal) error {
	ctx, cancel := context.WithTimeout(context.Background(), appendTimeout)
	defer cancel()
	err := prop.Wait(ctx, raft.StageAppended)
	if err != nil {
		p.appendMu.Lock()
		p.prodTerm = 0
		p.appendMu.Unlock()
	}
	return err
}

// waitHolders waits until the voters that hold the entry at index (flushed, or written
// under write caching) are at least min.insync.replicas and, with min.insync.racks on,
// span that many declared racks. fewer is the NOT_ENOUGH_REPLICAS_AFTER_APPEND message
// for too few holders: at the timeout, or once the replica stops leading. The rack rule
// fails at once when the ISR no longer spans the racks; at the timeout it is
// REQUEST_TIMED_OUT. Only while the rack rule holds a batch back does the waiter wake on a
// timer too (rackRecheck), since the ISR shrinks with time and no event.
func (p *Partition) waitHolders(ctx context.Context, index uint64, fewer string) (ProduceResult, bool) {
	var recheck *time.Timer
	defer func() {
		if recheck != nil {
			recheck.Stop()
		}
	}()
	for {
		p.mu.Lock()
		cfg := p.cfg.Load()
		enough := p.holdersLocked(index) >= p.minInsyncLocked()
		var racks rackVerdict
		if need := cfg.MinInsyncRacks; need > 1 {
			racks = p.rackVerdictLocked(index, need)
		} else {
			racks.met = true
		}
		switch {
		case enough && racks.met:
			p.mu.Unlock()
			return ProduceResult{}, true
		case !p.bounds.IsLeader:
			p.mu.Unlock()
			return failed(kerr.NotEnoughReplicasAfterAppend, fewer), false
		case racks.failed != nil:
			p.mu.Unlock()
			return *racks.failed, false
		case p.closed:
			p.mu.Unlock()
			return failed(kerr.NotEnoughReplicasAfterAppend, fewer), false
		}
		ch := p.changed
		p.mu.Unlock()
		var tick <-chan time.Time
		if !racks.met {
			if recheck == nil {
				recheck = time.NewTimer(rackRecheck)
			} else {
				recheck.Reset(rackRecheck)
			}
			tick = recheck.C
		}
		select {
		case <-ch:
		case <-tick:
		case <-ctx.Done():
			if !enough {
				return failed(kerr.NotEnoughReplicasAfterAppend, fewer), false
			}
			return racks.timedOut(cfg.WriteCaching), false
		}
	}
}

// appendTimeout bounds how long a produce waits for the leader's own append (no fsync,
// no network): only a wedged group gets near it.
const appendTimeout = 10 * time.Second
