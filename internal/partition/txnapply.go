package partition

import (
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
	p.txns = x
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
