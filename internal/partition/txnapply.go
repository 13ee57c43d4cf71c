package partition

import (
	"context"
	"log/slog"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// Feeding the transaction index (txnindex.go) from the entries Raft applies. Every replica
// reads the same committed entries in the same order, so every replica's index agrees.
// Only transactional batches are looked at: for the rest the hook reads one byte of an
// entry already in memory, so a partition that never sees a transaction pays nothing more
// on its write path.

// applyCommitted is the group's Apply hook, called by a raft worker with committed entries
// in order.
func (p *Partition) applyCommitted(_ uint64, ents []*raftpb.Entry) {
	if len(ents) == 0 {
		return
	}
	p.txnMu.Lock()
	if first := ents[0].GetIndex(); first > p.txnFed+1 {
		// Raft skipped entries: a snapshot moved this follower's log start past them, so
		// what the index holds of the entries before may never be closed (their markers
		// are among the skipped). Start afresh at the first entry delivered: the leader's
		// log start never passes an open transaction's first batch, so every transaction
		// still open has its batches in what follows, and one aborted across the gap is
		// opened at its first batch still stored, as a rebuild from the log would.
		from, err := p.log.EndOffsetAt(first - 1)
		if err != nil {
			from = p.log.LogStartOffset()
		}
		// A new replica's first entries (its bootstrap configuration) are never applied
		// here either: starting afresh at offset 0 skips no record, and is not worth one
		// INFO line per partition created.
		level := slog.LevelInfo
		if from == 0 {
			level = slog.LevelDebug
		}
		p.lg.Log(context.Background(), level, "transaction index: entries skipped by a snapshot; starting afresh", "from_index", first, "from_offset", from)
		p.txns = newTxnIndex(from)
	}
	p.txnFed = ents[len(ents)-1].GetIndex()
	p.txnMu.Unlock()
	for _, e := range ents {
		d := e.GetData()
		if e.GetType() != raftpb.EntryNormal || len(d) <= recordbatch.AttributesPos+1 ||
			recordbatch.Attributes(d)&recordbatch.AttrTransactional == 0 {
			continue
		}
		base, err := p.log.EndOffsetAt(e.GetIndex() - 1)
		if err != nil {
			p.lg.Error("transaction index: no offset for an applied entry", "index", e.GetIndex(), "err", err)
			continue
		}
		p.txnMu.Lock()
		p.txns.add(base, d)
		p.txnMu.Unlock()
	}
}

// buildTxnIndex reads the log into a fresh index up to the apply floor (the last
// configuration change, or the log's start if retention removed it), before the group
// starts: raft applies again only the entries after that one, and every
// entry up to it is committed (an entry above the commit may yet be truncated, so it is
// left to the hook).
func (p *Partition) buildTxnIndex() error {
	x := newTxnIndex(p.log.LogStartOffset())
	end, err := p.log.EndOffsetAt(p.ls.ApplyFloor())
	if err != nil {
		end = p.log.LogStartOffset()
	}
	err = p.log.ScanBatchesBelow(end, func(base int64, batch []byte) error {
		if recordbatch.Attributes(batch)&recordbatch.AttrTransactional != 0 {
			x.add(base, batch)
		}
		return nil
	})
	p.txns, p.txnFed = x, p.ls.ApplyFloor()
	return err
}

// LastStable is the partition's last stable offset (DESIGN.md §10): read_committed reads
// below it only. It is Boundaries().LastStable: the last visible offset, lowered to the
// first offset of the oldest transaction still open and to what this replica has applied.
func (p *Partition) LastStable() int64 { return p.Boundaries().LastStable }

// firstOpenTxn is the first offset of the oldest open transaction, math.MaxInt64 if none,
// for refresh.
func (p *Partition) firstOpenTxn() int64 {
	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	return p.txns.firstOpen()
}

// AbortedTxns lists the aborted transactions with records in [from, to), for a
// read_committed Fetch's AbortedTransactions.
func (p *Partition) AbortedTxns(from, to int64) []AbortedTxn {
	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	return p.txns.abortedIn(from, to)
}

// OpenTxns lists the transactions open on the partition, oldest first.
func (p *Partition) OpenTxns() []OpenTxn {
	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	return p.txns.openTxns()
}

// trimTxns forgets aborted transactions below a new log start.
func (p *Partition) trimTxns(start int64) {
	p.txnMu.Lock()
	p.txns.trim(start)
	p.txnMu.Unlock()
}
