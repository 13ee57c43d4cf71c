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

// WaitVisible blocks until last visible reaches end, the partition closes, or ctx ends.
func (p *Partition) WaitVisible(ctx context.Context, end int64) error {
	return p.waitFor(ctx, func(b *Boundaries) bool { return b.LastVisible >= end })
}

// waitAcked waits until prop (whose records end at end) satisfies acks=-1: committed, or
// majority replicated under write caching, and held by min.insync.replicas voters.
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
	if !p.waitHolders(ctx, prop.Index()) {
		return failed(kerr.NotEnoughReplicasAfterAppend, "the batch was appended but fewer replicas than min.insync.replicas hold it"), false
	}
	return ProduceResult{}, true
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

// waitHolders waits until at least min.insync.replicas voters hold the entry at index;
// false if ctx ends first (or the replica stops leading).
func (p *Partition) waitHolders(ctx context.Context, index uint64) bool {
	held := false
	err := p.waitFor(ctx, func(b *Boundaries) bool {
		held = p.holdersLocked(index) >= p.minInsyncLocked() // waitFor holds p.mu
		return held || !b.IsLeader
	})
	return err == nil && held
}

// appendTimeout bounds how long a produce waits for the leader's own append (no fsync,
// no network): only a wedged group gets near it.
const appendTimeout = 10 * time.Second
