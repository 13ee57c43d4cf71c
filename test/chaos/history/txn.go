package history

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// Transactions (mode txn). A transactional producer records KindTxnBegin with the records
// it means to write, produces each as a KindProduce carrying the same Txn, and records one
// or more KindTxnEnd. The checker judges each transaction from what its producer saw:
//
//   - committed: a commit's EndTransaction returned OK;
//   - aborted: no commit was ever asked (the producer aborted, or stopped before it
//     ended), or every commit asked failed definitely (DefiniteTxnEndError): the
//     coordinator can only have aborted it;
//   - ambiguous: a commit was asked and its outcome is not known (an error that is not
//     definite, or no answer). A later abort that returns OK does not settle it, since a
//     commit the coordinator had prepared completes whatever the producer asks next.
//
// What the read_committed consumers (Options.ReadCommitted) read is then held to:
//
//   - txn-aborted-read: no record of an aborted transaction is ever read.
//   - txn-early-read: no record is read before its transaction's commit was asked: the poll
//     that returned it must come after the first commit request in the history. The
//     Recorder's sequence is used rather than the wall clock, which may step; since the
//     request is recorded before it is sent and the poll after it returned, a poll that
//     precedes the request in the history read the record before any commit existed.
//   - txn-missing: a consumer that caught up with a partition (KindCaughtUp, once the
//     producers had stopped and every transaction had ended) read every record of every
//     committed transaction in that partition below its position.
//   - txn-partial: an ambiguous transaction is all or nothing: if any read_committed
//     consumer read any of its records, every caught-up consumer read all of them.
//   - txn-dup-read: a consumer reads a committed (or visible) record at one offset only.
//     A re-read of the same offset is the poll order rule's business (nonmono-poll).
//   - lso-regress: the last stable offset one consumer sees of a partition never goes
//     back from one fetch to the next (consumers are not restarted in a session).
//   - above-lso: a read_committed fetch returns no record at or above its own LSO.
//
// The records themselves are also held to the mode's produce rules (Txn is Strict's): an
// acknowledged record of a transaction, committed or aborted, stays in the log, since an
// abort writes a marker and removes nothing; the final read is read_uncommitted.

// Transaction rules' violation kinds.
const (
	VTxnMissing = "txn-missing"
	VTxnPartial = "txn-partial"
	VTxnAborted = "txn-aborted-read"
	VTxnEarly   = "txn-early-read"
	VTxnDup     = "txn-dup-read"
	VLSORegress = "lso-regress"
	VAboveLSO   = "above-lso"
)

// TxnCommit and TxnAbort are a KindTxnEnd's Value.
const (
	TxnCommit = "commit"
	TxnAbort  = "abort"
)

// TxnSummary counts the transactions by outcome.
type TxnSummary struct {
	Begun, Committed, Aborted, Ambiguous int
	Visible                              int // of Ambiguous, those read_committed consumers saw
}

func (s TxnSummary) String() string {
	return fmt.Sprintf("txns=%d committed=%d aborted=%d ambiguous=%d ambiguous-visible=%d",
		s.Begun, s.Committed, s.Aborted, s.Ambiguous, s.Visible)
}

type txnOutcome int

const (
	txnAborted txnOutcome = iota
	txnCommitted
	txnAmbiguous
)

type txnState struct {
	id, process string
	begin       int64    // seq of the txn-begin
	values      []string // the records it meant to write
	commitReq   int64    // seq of the first commit request; 0: none
	commitAt    time.Time
	commitOK    bool
	// commitOpen counts the commit requests neither acknowledged nor definitely failed,
	// those still without a completion included.
	commitOpen int
}

func (t *txnState) outcome() txnOutcome {
	switch {
	case t.commitOK:
		return txnCommitted
	case t.commitOpen > 0:
		return txnAmbiguous
	}
	return txnAborted
}

// txnRead is one record a read_committed consumer read.
type txnRead struct {
	process     string
	tp          TP
	offset, seq int64
	at          time.Time
}

type txnEnd struct {
	t      *txnState
	commit bool
}

// txnIndex is what the checker keeps of the transactions and of what read_committed
// consumers read.
type txnIndex struct {
	txns   map[string]*txnState
	order  []*txnState
	member map[string]*txnState // record value -> its transaction
	ends   map[int64]txnEnd     // txn-end invocation id -> its transaction and decision
	reads  map[string][]txnRead // value -> its reads under read_committed
	lso    map[ptp]int64        // the highest LSO each consumer saw of each partition
	caught map[ptp]int64        // caught-up positions
}

func newTxnIndex() *txnIndex {
	return &txnIndex{txns: map[string]*txnState{}, member: map[string]*txnState{}, ends: map[int64]txnEnd{},
		reads: map[string][]txnRead{}, lso: map[ptp]int64{}, caught: map[ptp]int64{}}
}

// addTxn takes a txn-begin, txn-end or caught-up entry.
func (c *Checker) addTxn(op Op) {
	x := c.txn
	switch op.Kind {
	case KindTxnBegin:
		if _, dup := x.txns[op.Txn]; dup || op.Txn == "" {
			c.violate(VMalformed, "seq %d: transaction %q begun twice, or with no name", op.Seq, op.Txn)
			return
		}
		t := &txnState{id: op.Txn, process: op.Process, begin: op.Seq}
		for _, r := range op.Records {
			if o, dup := x.member[r.Value]; dup {
				c.violate(VMalformed, "seq %d: value %q of transaction %q is also in %q; values must be unique", op.Seq, r.Value, op.Txn, o.id)
				continue
			}
			x.member[r.Value] = t
			t.values = append(t.values, r.Value)
		}
		x.txns[op.Txn] = t
		x.order = append(x.order, t)
	case KindTxnEnd:
		if op.Phase == Invoke {
			t := x.txns[op.Txn]
			if t == nil || (op.Value != TxnCommit && op.Value != TxnAbort) {
				c.violate(VMalformed, "seq %d: txn-end %q of transaction %q, which was not begun (or is not commit or abort)", op.Seq, op.Value, op.Txn)
				return
			}
			commit := op.Value == TxnCommit
			x.ends[op.ID] = txnEnd{t, commit}
			if commit {
				if t.commitReq == 0 {
					t.commitReq, t.commitAt = op.Seq, op.Time
				}
				t.commitOpen++
			}
			return
		}
		e, ok := x.ends[op.ID]
		if !ok {
			c.violate(VMalformed, "seq %d: completion of txn-end %d of %q with no invocation", op.Seq, op.ID, op.Txn)
			return
		}
		delete(x.ends, op.ID)
		if !e.commit {
			return // an abort settles nothing: see the comment at the top
		}
		switch {
		case op.Phase == OK:
			e.t.commitOK = true
			e.t.commitOpen--
		case op.Phase == Fail && op.Definite:
			e.t.commitOpen--
		}
	case KindCaughtUp:
		k := ptp{op.Process, TP{op.Topic, op.Partition}}
		if prev, ok := x.caught[k]; !ok || op.Offset > prev {
			x.caught[k] = op.Offset
		}
	}
}

// txnProduced checks that a transactional produce is one of its txn-begin's records.
func (c *Checker) txnProduced(op Op) {
	if op.Txn == "" {
		return
	}
	if t := c.txn.member[op.Value]; t == nil || t.id != op.Txn {
		c.violate(VMalformed, "seq %d: value %q produced in transaction %q is not among the records its txn-begin named", op.Seq, op.Value, op.Txn)
	}
}

// addTxnPoll keeps the LSO a poll saw and what a read_committed consumer read.
func (c *Checker) addTxnPoll(op Op) {
	tp := TP{op.Topic, op.Partition}
	k := ptp{op.Process, tp}
	x := c.txn
	if op.LSO != nil && !c.opts.FollowerReaders[op.Process] {
		if prev, ok := x.lso[k]; ok && *op.LSO < prev {
			c.violate(VLSORegress, "%s: %s saw last stable offset %d (seq %d) after %d", tp, op.Process, *op.LSO, op.Seq, prev)
		} else {
			x.lso[k] = *op.LSO
		}
	}
	if !c.opts.ReadCommitted[op.Process] {
		return
	}
	for _, r := range op.Records {
		if op.LSO != nil && r.Offset >= *op.LSO {
			c.violate(VAboveLSO, "%s: %s read offset %d (value %q) under read_committed at seq %d, at or above the fetch's last stable offset %d",
				tp, op.Process, r.Offset, r.Value, op.Seq, *op.LSO)
		}
		x.reads[r.Value] = append(x.reads[r.Value], txnRead{op.Process, tp, r.Offset, op.Seq, op.Time})
	}
}

// checkTxns runs the transaction rules (see the top of the file) once the history is in.
// finalOffsets is the final read's offsets of each value, for records whose produce has
// no acknowledged offset.
func (c *Checker) checkTxns(finalOffsets map[TP]map[string][]int64) {
	x := c.txn
	s := &c.res.Summary.Txns
	var caughtUp []string // the read_committed consumers that caught up somewhere
	for k := range x.caught {
		if c.opts.ReadCommitted[k.process] && !slices.Contains(caughtUp, k.process) {
			caughtUp = append(caughtUp, k.process)
		}
	}
	sort.Strings(caughtUp)
	for _, t := range x.order {
		s.Begun++
		out := t.outcome()
		visible := false
		for _, v := range t.values {
			visible = visible || len(x.reads[v]) > 0
		}
		switch out {
		case txnCommitted:
			s.Committed++
		case txnAborted:
			s.Aborted++
		default:
			s.Ambiguous++
			if visible {
				s.Visible++
			}
		}
		for _, v := range t.values {
			offsets := map[string]map[int64]bool{}
			for _, r := range x.reads[v] {
				switch {
				case out == txnAborted && t.commitReq == 0:
					c.violate(VTxnAborted, "%s offset %d: %s read %q (seq %d) of transaction %q, whose producer never asked to commit it",
						r.tp, r.offset, r.process, v, r.seq, t.id)
				case out == txnAborted:
					c.violate(VTxnAborted, "%s offset %d: %s read %q (seq %d) of transaction %q, whose every commit failed definitely",
						r.tp, r.offset, r.process, v, r.seq, t.id)
				case r.seq < t.commitReq:
					c.violate(VTxnEarly, "%s offset %d: %s read %q of transaction %q at seq %d (%s), before its commit was asked at seq %d (%s)",
						r.tp, r.offset, r.process, v, t.id, r.seq, r.at.Format(time.RFC3339Nano), t.commitReq, t.commitAt.Format(time.RFC3339Nano))
				}
				if offsets[r.process] == nil {
					offsets[r.process] = map[int64]bool{}
				}
				offsets[r.process][r.offset] = true
			}
			if out == txnAborted {
				continue
			}
			for _, proc := range sortedKeys(offsets) {
				if n := len(offsets[proc]); n > 1 {
					c.violate(VTxnDup, "%s read %q of transaction %q at %d offsets %v", proc, v, t.id, n, sortedKeys(offsets[proc]))
				}
			}
		}
		if out == txnCommitted || (out == txnAmbiguous && visible) {
			c.checkWhole(t, out, caughtUp, finalOffsets)
		}
	}
}

// checkWhole: every caught-up read_committed consumer read every record of t (committed,
// or ambiguous and seen) in the partitions it caught up with, below its position there.
func (c *Checker) checkWhole(t *txnState, out txnOutcome, caughtUp []string, finalOffsets map[TP]map[string][]int64) {
	x := c.txn
	for _, proc := range caughtUp {
		var missing []string
		read := 0
		for _, v := range t.values {
			p := c.prods[v]
			if p == nil {
				c.violate(VMalformed, "value %q of transaction %q was never produced", v, t.id)
				continue
			}
			pos, ok := x.caught[ptp{proc, p.tp}]
			if !ok {
				continue // it never caught up with that partition: no judgement
			}
			off := p.offset
			if off < 0 && len(finalOffsets[p.tp][v]) > 0 {
				off = finalOffsets[p.tp][v][0]
			}
			if off >= pos {
				continue // beyond where it caught up
			}
			if slices.ContainsFunc(x.reads[v], func(r txnRead) bool { return r.process == proc }) {
				read++
			} else {
				missing = append(missing, fmt.Sprintf("%q (%s offset %d)", v, p.tp, off))
			}
		}
		if len(missing) == 0 {
			continue
		}
		if out == txnCommitted {
			c.violate(VTxnMissing, "%s caught up but never read %v of transaction %q, committed at seq %d", proc, missing, t.id, t.commitReq)
		} else {
			c.violate(VTxnPartial, "%s caught up and read %d of the records of transaction %q (outcome unknown to its producer, seen by a read_committed consumer) but not %v",
				proc, read, t.id, missing)
		}
	}
}
