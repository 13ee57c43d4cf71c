package history

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
)

// Mode is the durability mode a run exercises (issue 5 §4).
type Mode string

const (
	// Strict: acks=-1 on a strict topic. No loss, under any faults.
	Strict Mode = "strict"
	// WriteCaching: acks=-1 on a write-caching topic. No loss, unless AllowSuffixLoss.
	WriteCaching Mode = "write-caching"
	// Acks1: acks=1, with idempotence off (clients allow it only with acks=-1). Loss of
	// acknowledged writes is allowed, and so are duplicates (a retry of a batch whose
	// answer was lost is stored again); both are counted, not violations. Everything else
	// holds, since consumers still read only committed records.
	Acks1 Mode = "acks1"
	// Txn: transactional producers (acks=-1) on a strict topic, read_committed consumers.
	// Strict's rules for every record, and the transaction rules of txn.go besides.
	Txn Mode = "txn"
)

// ParseMode accepts strict, write-caching, acks1 and txn.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Strict, WriteCaching, Acks1, Txn:
		return m, nil
	}
	return "", fmt.Errorf("history: unknown mode %q (want strict, write-caching, acks1 or txn)", s)
}

// Options say what the contract allows in a run.
type Options struct {
	Mode Mode
	// AllowSuffixLoss allows the loss a majority power loss may cause under write caching:
	// acknowledged writes may be lost, but only as a clean suffix of each partition, and
	// what a consumer read may vanish with them. See Check for the exact rule.
	AllowSuffixLoss bool
	// AllowHWRegressOnEpochChange lets a high watermark observation be lower than an
	// earlier one when it carries a higher leader epoch (a new leader that has not yet
	// learnt the old commit index). Off by default: the contract makes visible = committed,
	// which never moves back outside a power loss.
	AllowHWRegressOnEpochChange bool
	// FollowerReaders are the processes that may read from a follower (KIP-392): a
	// follower's high watermark trails its leader's, so theirs may move back when they
	// move between replicas, and the regress check leaves them out. Every other check,
	// what they read above all, applies to them as to any reader.
	FollowerReaders map[string]bool
	// ReadCommitted are the processes that read under read_committed: the transaction
	// rules (txn.go) judge what they read. Every other reader may see aborted records.
	ReadCommitted map[string]bool
}

// FinalPartition is the final full read of one partition: every record from LogStart.
type FinalPartition struct {
	LogStart int64
	Records  []Record
}

// Final is the final read of every partition the workload used.
type Final map[TP]FinalPartition

// Violation kinds (and the counters of Summary).
const (
	VLost            = "lost"
	VSuffixHole      = "suffix-hole"
	VInconsistent    = "inconsistent"
	VDuplicate       = "dup"
	VNonMonoSend     = "nonmono-send"
	VNonMonoPoll     = "nonmono-poll"
	VAboveHW         = "above-hw"
	VFailedRead      = "failed-read"
	VPhantom         = "phantom"
	VVanished        = "vanished"
	VHWRegress       = "hw-regress"
	VLogStartRegress = "ls-regress"
	VCommitRegress   = "commit-regress"
	VMalformed       = "malformed"
)

// kindsTxn are the transaction rules' kinds (txn.go), after the others.
var kindsTxn = []string{VTxnMissing, VTxnPartial, VTxnAborted, VTxnEarly, VTxnDup, VLSORegress, VAboveLSO}

var kinds = append([]string{VLost, VSuffixHole, VInconsistent, VDuplicate, VNonMonoSend, VNonMonoPoll,
	VAboveHW, VFailedRead, VPhantom, VVanished, VHWRegress, VLogStartRegress, VCommitRegress, VMalformed},
	kindsTxn...)

// MaxDetails is how many violations of each kind Violations keeps.
const MaxDetails = 20

// Summary counts what the checker saw.
type Summary struct {
	Ops        int64 // history entries
	Faults     int   // fault markers
	Acked      int   // acknowledged produces
	Checked    int   // acknowledged produces checked against the final read
	Unverified int   // acknowledged produces whose partition has no final read, or below its log start
	Indefinite int   // produces that failed indefinitely or ended unknown
	Definite   int   // produces that failed definitely
	Reads      int64 // records returned by polls
	Lost       int   // acknowledged writes missing from the final read (allowed or not)
	LostOK     int   // of Lost, those the mode allows
	DupOK      int   // values stored at more than one offset that the mode allows (acks1)
	Txns       TxnSummary
	Counts     map[string]int
}

// Violated reports whether any violation was found.
func (s Summary) Violated() bool {
	for _, n := range s.Counts {
		if n > 0 {
			return true
		}
	}
	return false
}

// String is the one-line summary.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ops=%d faults=%d acked=%d checked=%d unverified=%d indefinite=%d definite-fail=%d reads=%d lost=%d lost-allowed=%d dup-allowed=%d",
		s.Ops, s.Faults, s.Acked, s.Checked, s.Unverified, s.Indefinite, s.Definite, s.Reads, s.Lost, s.LostOK, s.DupOK)
	if s.Txns.Begun > 0 {
		fmt.Fprintf(&b, " %s", s.Txns)
	}
	for _, k := range kinds {
		if k == VLost || (s.Txns.Begun == 0 && slices.Contains(kindsTxn, k) && s.Counts[k] == 0) {
			continue
		}
		if k == VNonMonoSend {
			fmt.Fprintf(&b, " nonmono=%d", s.Counts[VNonMonoSend]+s.Counts[VNonMonoPoll])
		}
		fmt.Fprintf(&b, " %s=%d", k, s.Counts[k])
	}
	return b.String()
}

// Result is what Check returns.
type Result struct {
	Summary Summary
	details map[string][]string
}

// Valid reports whether the history satisfies the contract.
func (r *Result) Valid() bool { return !r.Summary.Violated() }

// Violations returns human-readable details: at most MaxDetails of each kind.
func (r *Result) Violations() []string {
	var out []string
	for _, k := range kinds {
		for _, d := range r.details[k] {
			out = append(out, k+": "+d)
		}
		if n := r.Summary.Counts[k]; n > len(r.details[k]) {
			out = append(out, fmt.Sprintf("%s: ... and %d more", k, n-len(r.details[k])))
		}
	}
	return out
}

// Count returns the number of violations of kind k.
func (r *Result) Count(k string) int { return r.Summary.Counts[k] }

type prod struct {
	value, process string
	tp             TP
	inv, done      int64
	doneAt         int64 // the completion's Time, in Unix nanoseconds
	phase          Phase
	offset         int64
	definite       bool
	lost           bool
	err            string
}

type obsKey struct {
	tp  TP
	off int64
}

type source struct {
	value string
	who   string // "poll p1 seq 12", "ack p2", "final"
	poll  bool
}

type hwObs struct {
	inv, done int64
	hw, ls    int64
	epoch     int32
}

type commitObs struct {
	process   string
	inv, done int64
	offset    int64
}

// lossyFault is a lossy fault's window: from its marker (seq at) until restartAt (Unix
// nanoseconds), the Time of the KindRestart that closed it, recorded at seq restart.
// Without one (an older history, or a fault whose window the harness cannot vouch for)
// restart is at, and the window is empty.
type lossyFault struct {
	name        string
	at, restart int64
	restartAt   int64
}

type gtp struct {
	group string
	tp    TP
}

type ptp struct {
	process string
	tp      TP
}

// Checker checks a history streamed into it with Add, in Seq order. It keeps a compact
// index of the history, not the history itself.
type Checker struct {
	opts      Options
	res       *Result
	prods     map[string]*prod
	byID      map[int64]*prod
	invokes   map[int64]int64 // non-produce invocation id -> seq
	reads     map[obsKey][]source
	lastPoll  map[ptp]int64
	hws       map[ptp][]hwObs
	commits   map[gtp][]commitObs
	committed map[gtp][]commitObs
	faults    []lossyFault
	txn       *txnIndex
	finished  bool
}

// NewChecker returns a Checker for opts.
func NewChecker(opts Options) *Checker {
	return &Checker{
		opts:      opts,
		res:       &Result{Summary: Summary{Counts: map[string]int{}}, details: map[string][]string{}},
		prods:     map[string]*prod{},
		byID:      map[int64]*prod{},
		invokes:   map[int64]int64{},
		reads:     map[obsKey][]source{},
		lastPoll:  map[ptp]int64{},
		hws:       map[ptp][]hwObs{},
		commits:   map[gtp][]commitObs{},
		committed: map[gtp][]commitObs{},
		txn:       newTxnIndex(),
	}
}

func (c *Checker) violate(kind, format string, args ...any) {
	c.res.Summary.Counts[kind]++
	if len(c.res.details[kind]) < MaxDetails {
		c.res.details[kind] = append(c.res.details[kind], fmt.Sprintf(format, args...))
	}
}

func (c *Checker) lossAllowed() bool { return c.opts.Mode == Acks1 || c.opts.AllowSuffixLoss }

// Add feeds the next history entry.
func (c *Checker) Add(op Op) {
	c.res.Summary.Ops++
	tp := TP{op.Topic, op.Partition}
	switch op.Kind {
	case KindProduce:
		c.addProduce(op)
	case KindPoll:
		if op.Phase != OK {
			return
		}
		k := ptp{op.Process, tp}
		for _, r := range op.Records {
			c.res.Summary.Reads++
			if op.HW >= 0 && r.Offset >= op.HW {
				c.violate(VAboveHW, "%s: %s read offset %d (value %q) at seq %d, above the fetch's high watermark %d",
					tp, op.Process, r.Offset, r.Value, op.Seq, op.HW)
			}
			if last, ok := c.lastPoll[k]; ok && r.Offset <= last && !c.opts.AllowSuffixLoss {
				c.violate(VNonMonoPoll, "%s: %s read offset %d after offset %d (seq %d) with no seek between",
					tp, op.Process, r.Offset, last, op.Seq)
			}
			c.lastPoll[k] = r.Offset
			ok := obsKey{tp, r.Offset}
			c.reads[ok] = addSource(c.reads[ok], source{value: r.Value, who: fmt.Sprintf("poll by %s at seq %d", op.Process, op.Seq), poll: true})
		}
		if op.HW >= 0 || op.LogStart >= 0 {
			c.hws[k] = append(c.hws[k], hwObs{op.Seq, op.Seq, op.HW, op.LogStart, op.LeaderEpoch})
		}
		c.addTxnPoll(op)
	case KindSeek:
		delete(c.lastPoll, ptp{op.Process, tp})
	case KindOffsets:
		if op.Phase == Invoke {
			c.invokes[op.ID] = op.Seq
			return
		}
		inv := c.takeInvoke(op)
		if op.Phase == OK && (op.HW >= 0 || op.LogStart >= 0) {
			k := ptp{op.Process, tp}
			c.hws[k] = append(c.hws[k], hwObs{inv, op.Seq, op.HW, op.LogStart, op.LeaderEpoch})
		}
	case KindCommit, KindCommitted:
		if op.Phase == Invoke {
			c.invokes[op.ID] = op.Seq
			return
		}
		inv := c.takeInvoke(op)
		if op.Phase != OK {
			return
		}
		k := gtp{op.Group, tp}
		o := commitObs{op.Process, inv, op.Seq, op.Offset}
		if op.Kind == KindCommit {
			c.commits[k] = append(c.commits[k], o)
		} else {
			c.committed[k] = append(c.committed[k], o)
		}
	case KindFault:
		c.res.Summary.Faults++
		if op.Lossy {
			c.faults = append(c.faults, lossyFault{name: op.Value, at: op.Seq, restart: op.Seq})
		}
	case KindRestart:
		// The harness injects one fault at a time, so a restart closes the latest lossy
		// fault, if it names it and nothing closed it yet; other restarts end no window.
		if n := len(c.faults); n > 0 && c.faults[n-1].name == op.Value && c.faults[n-1].restart == c.faults[n-1].at {
			c.faults[n-1].restart, c.faults[n-1].restartAt = op.Seq, op.Time.UnixNano()
		}
	case KindTxnBegin, KindTxnEnd, KindCaughtUp:
		c.addTxn(op)
	default:
		c.violate(VMalformed, "seq %d: unknown kind %q", op.Seq, op.Kind)
	}
}

func (c *Checker) takeInvoke(op Op) int64 {
	if inv, ok := c.invokes[op.ID]; ok {
		delete(c.invokes, op.ID)
		return inv
	}
	return op.Seq
}

func addSource(s []source, n source) []source {
	for _, o := range s {
		if o.value == n.value && o.poll == n.poll {
			return s
		}
	}
	return append(s, n)
}

func (c *Checker) addProduce(op Op) {
	tp := TP{op.Topic, op.Partition}
	if op.Phase == Invoke {
		if _, dup := c.prods[op.Value]; dup {
			c.violate(VMalformed, "seq %d: value %q produced twice; values must be unique", op.Seq, op.Value)
			return
		}
		p := &prod{value: op.Value, process: op.Process, tp: tp, inv: op.Seq, phase: Invoke, offset: -1}
		c.prods[op.Value] = p
		c.txnProduced(op)
		c.byID[op.ID] = p
		return
	}
	p, ok := c.byID[op.ID]
	if ok {
		delete(c.byID, op.ID)
	} else if p, ok = c.prods[op.Value]; !ok || p.phase != Invoke {
		if ok {
			c.violate(VMalformed, "seq %d: second completion of value %q", op.Seq, op.Value)
			return
		}
		p = &prod{value: op.Value, process: op.Process, tp: tp, inv: op.Seq}
		c.prods[op.Value] = p
	}
	if op.Partition >= 0 {
		p.tp = tp // the partitioner may pick the partition after the invocation
	}
	p.done, p.doneAt, p.phase, p.offset, p.err = op.Seq, op.Time.UnixNano(), op.Phase, -1, op.Error
	p.definite = op.Phase == Fail && op.Definite
	if op.Phase == OK {
		p.offset = op.Offset
	}
}

// Check checks a whole history in memory.
func Check(ops []Op, final Final, opts Options) *Result {
	c := NewChecker(opts)
	for _, op := range ops {
		c.Add(op)
	}
	return c.Finish(final)
}

// CheckFile checks the history file at path, streaming it.
func CheckFile(path string, final Final, opts Options) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := NewChecker(opts)
	if err := Scan(f, func(op Op) error { c.Add(op); return nil }); err != nil {
		return nil, err
	}
	return c.Finish(final), nil
}

// Finish runs the checks that need the whole history and the final read, and returns the
// result. The Checker must not be used afterwards.
func (c *Checker) Finish(final Final) *Result {
	if c.finished {
		panic("history: Finish called twice")
	}
	c.finished = true
	s := &c.res.Summary

	// Index the final read: offset -> record, value -> offsets.
	finalAt := map[obsKey]Record{}
	finalOffsets := map[TP]map[string][]int64{}
	for tp, fp := range final {
		vo := map[string][]int64{}
		for _, r := range fp.Records {
			finalAt[obsKey{tp, r.Offset}] = r
			vo[r.Value] = append(vo[r.Value], r.Offset)
		}
		finalOffsets[tp] = vo
	}

	// Produces: acknowledged, lost, and the acks that count as observations.
	acked := map[TP][]*prod{}
	var lost []*prod
	obs := c.reads
	for _, p := range c.prods {
		switch {
		case p.phase == OK:
			s.Acked++
		case p.phase == Fail && p.definite:
			s.Definite++
			continue
		default:
			s.Indefinite++
			continue
		}
		fp, haveFinal := final[p.tp]
		survived := haveFinal && len(finalOffsets[p.tp][p.value]) > 0
		if !survived && (!haveFinal || (p.offset >= 0 && p.offset < fp.LogStart)) {
			s.Unverified++
			continue
		}
		s.Checked++
		acked[p.tp] = append(acked[p.tp], p)
		if !survived {
			s.Lost++
			p.lost = true
			lost = append(lost, p)
			if c.lossAllowed() {
				continue // its offset may legally hold another value now
			}
		}
		if p.offset >= 0 {
			k := obsKey{p.tp, p.offset}
			obs[k] = addSource(obs[k], source{value: p.value, who: "ack to " + p.process})
		}
	}
	c.checkLost(lost, acked)

	// Offsets: one value per offset, one offset per value, nothing read that vanished.
	valueAt := map[TP]map[string]map[int64]string{}
	addValueAt := func(tp TP, v string, off int64, who string) {
		m := valueAt[tp]
		if m == nil {
			m = map[string]map[int64]string{}
			valueAt[tp] = m
		}
		if m[v] == nil {
			m[v] = map[int64]string{}
		}
		if _, ok := m[v][off]; !ok {
			m[v][off] = who
		}
	}
	keys := make([]obsKey, 0, len(obs))
	for k := range obs {
		keys = append(keys, k)
	}
	sortKeys(keys)
	for _, k := range keys {
		srcs := obs[k]
		fr, inFinal := finalAt[k]
		fp, haveFinal := final[k.tp]
		checkable := haveFinal && k.off >= fp.LogStart
		vals := map[string]string{}
		if inFinal {
			vals[fr.Value] = "final read"
		}
		for _, src := range srcs {
			if src.poll {
				c.checkReadValue(k.tp, k.off, src)
			}
			if src.poll && c.opts.AllowSuffixLoss && checkable && (!inFinal || fr.Value != src.value) {
				continue // removed by a power loss; the contract allows it under write caching
			}
			if src.poll && checkable && !inFinal && len(finalOffsets[k.tp][src.value]) == 0 {
				c.violate(VVanished, "%s offset %d: value %q (%s) is not in the final read", k.tp, k.off, src.value, src.who)
			}
			if _, ok := vals[src.value]; !ok {
				vals[src.value] = src.who
			}
			addValueAt(k.tp, src.value, k.off, src.who)
		}
		if len(vals) > 1 {
			c.violate(VInconsistent, "%s offset %d holds %s", k.tp, k.off, describe(vals))
		}
	}
	for tp, fp := range final {
		for _, r := range fp.Records {
			addValueAt(tp, r.Value, r.Offset, "final read")
			if _, ok := obs[obsKey{tp, r.Offset}]; !ok {
				c.checkReadValue(tp, r.Offset, source{value: r.Value, who: "final read"})
			}
		}
	}
	for _, tp := range sortedTPs(valueAt) {
		vm := valueAt[tp]
		vals := make([]string, 0, len(vm))
		for v := range vm {
			vals = append(vals, v)
		}
		sort.Strings(vals)
		for _, v := range vals {
			if len(vm[v]) > 1 && c.opts.Mode == Acks1 {
				s.DupOK++
				continue
			}
			if len(vm[v]) > 1 {
				parts := map[string]string{}
				for off, who := range vm[v] {
					parts[fmt.Sprint(off)] = who
				}
				c.violate(VDuplicate, "%s value %q stored at offsets %s", tp, v, describe(parts))
			}
		}
	}

	c.checkSends()
	c.checkRegress()
	c.checkCommits()
	c.checkTxns(finalOffsets)
	return c.res
}

// checkReadValue: a read value must have been produced, and not have failed definitely.
func (c *Checker) checkReadValue(tp TP, off int64, src source) {
	p, ok := c.prods[src.value]
	if !ok {
		c.violate(VPhantom, "%s offset %d: value %q (%s) was never produced", tp, off, src.value, src.who)
		return
	}
	if p.phase == Fail && p.definite {
		c.violate(VFailedRead, "%s offset %d: value %q (%s) failed definitely: %s", tp, off, src.value, src.who, p.err)
	}
}

// checkLost judges each lost acknowledged write. Strict and write caching without
// AllowSuffixLoss: every one is a violation. Acks1: none is. AllowSuffixLoss: a lost write L
// (acknowledged at offset oL) must be explained by a lossy fault F, and be part of a clean
// suffix: no acknowledged write of the same partition that survived has a higher offset
// than oL and was acknowledged before F's marker. F is the first lossy fault whose window
// had not closed when L was acknowledged. The window runs from the fault's marker (once its
// brokers are all down) to the Time of its restart marker (when the first of them could run
// a partition replica again; empty when there is no restart marker). Inside it no partition
// has a majority of its replicas up, so a write acknowledged there was majority-replicated
// before the cut, on a report delivered late: it is exposed to F like one acknowledged
// before F's marker, and must have been sent before that marker, else it is lost with no
// fault to explain it. Dating the exposure from the send instead would excuse a write
// retried across a fault and acknowledged by a new leader after it.
// With no markers at all the rule is "every lost acknowledged write is above every
// surviving one"; the markers let writes made after a power loss reuse the offsets it freed.
func (c *Checker) checkLost(lost []*prod, acked map[TP][]*prod) {
	sort.Slice(lost, func(i, j int) bool { return lost[i].done < lost[j].done })
	if c.opts.Mode == Acks1 {
		c.res.Summary.LostOK += len(lost)
		return
	}
	if !c.opts.AllowSuffixLoss {
		for _, p := range lost {
			c.violate(VLost, "%s: value %q acknowledged at offset %d to %s (seq %d) is not in the final read", p.tp, p.value, p.offset, p.process, p.done)
		}
		return
	}
	// Per partition: surviving acknowledged writes by acknowledgement seq, with the prefix
	// maximum of their offsets.
	type surv struct {
		done, maxOff int64
		value        string
	}
	survivors := map[TP][]surv{}
	isLost := map[*prod]bool{}
	for _, p := range lost {
		isLost[p] = true
	}
	for tp, ps := range acked {
		var ss []surv
		for _, p := range ps {
			if !isLost[p] && p.offset >= 0 {
				ss = append(ss, surv{p.done, p.offset, p.value})
			}
		}
		sort.Slice(ss, func(i, j int) bool { return ss[i].done < ss[j].done })
		for i := 1; i < len(ss); i++ {
			if ss[i].maxOff < ss[i-1].maxOff {
				ss[i].maxOff, ss[i].value = ss[i-1].maxOff, ss[i-1].value
			}
		}
		survivors[tp] = ss
	}
	for _, p := range lost {
		cut := int64(1<<62 - 1)
		if len(c.faults) > 0 {
			i := sort.Search(len(c.faults), func(i int) bool { return c.faults[i].restart > p.done })
			if i < len(c.faults) && p.done > c.faults[i].at && p.doneAt >= c.faults[i].restartAt {
				i++ // recorded before the restart marker, but acknowledged after the window
			}
			if i == len(c.faults) {
				c.violate(VLost, "%s: value %q acknowledged at offset %d (seq %d) is lost, and no lossy fault came after its acknowledgement", p.tp, p.value, p.offset, p.done)
				continue
			}
			f := c.faults[i]
			if p.done > f.at && p.inv > f.at {
				c.violate(VLost, "%s: value %q sent (seq %d) and acknowledged at offset %d (seq %d) while fault %q (seq %d to its restart at seq %d) had a majority down is lost",
					p.tp, p.value, p.inv, p.offset, p.done, f.name, f.at, f.restart)
				continue
			}
			cut = f.at
		}
		ss := survivors[p.tp]
		n := sort.Search(len(ss), func(i int) bool { return ss[i].done >= cut })
		if n > 0 && p.offset >= 0 && ss[n-1].maxOff > p.offset {
			c.violate(VSuffixHole, "%s: value %q acknowledged at offset %d is lost, but %q acknowledged at offset %d before the loss survived", p.tp, p.value, p.offset, ss[n-1].value, ss[n-1].maxOff)
			continue
		}
		c.res.Summary.LostOK++
	}
}

// checkSends: one producer's acknowledged offsets in a partition increase with the order of
// its sends (invocations). Where loss is allowed, lost writes are left out: the offset a
// lost write was acknowledged at may be given again.
func (c *Checker) checkSends() {
	by := map[ptp][]*prod{}
	for _, p := range c.prods {
		if p.phase == OK && p.offset >= 0 && !(p.lost && c.lossAllowed()) {
			k := ptp{p.process, p.tp}
			by[k] = append(by[k], p)
		}
	}
	for _, k := range sortedPTPs(by) {
		ps := by[k]
		sort.Slice(ps, func(i, j int) bool { return ps[i].inv < ps[j].inv })
		for i := 1; i < len(ps); i++ {
			if ps[i].offset <= ps[i-1].offset {
				c.violate(VNonMonoSend, "%s: %s sent %q (seq %d) after %q (seq %d), but it was acknowledged at offset %d, not above %d",
					k.tp, k.process, ps[i].value, ps[i].inv, ps[i-1].value, ps[i-1].inv, ps[i].offset, ps[i-1].offset)
			}
		}
	}
}

// checkRegress: in one client's observations of a partition, an observation invoked after
// another completed must not show a lower high watermark or log start. AllowSuffixLoss
// allows both to move back (a power loss truncates what was visible, and may bring back
// segments whose deletion was not yet durable); AllowHWRegressOnEpochChange allows the high
// watermark to move back with a higher leader epoch.
func (c *Checker) checkRegress() {
	for _, k := range sortedPTPs(c.hws) {
		if c.opts.FollowerReaders[k.process] {
			continue
		}
		os := c.hws[k]
		byInv := slices.Clone(os)
		sort.SliceStable(byInv, func(i, j int) bool { return byInv[i].inv < byInv[j].inv })
		byDone := slices.Clone(os)
		sort.SliceStable(byDone, func(i, j int) bool { return byDone[i].done < byDone[j].done })
		maxHW, maxLS := int64(-1), int64(-1)
		var hwEpoch int32 = -1
		j := 0
		for _, o := range byInv {
			for ; j < len(byDone) && byDone[j].done < o.inv; j++ {
				if d := byDone[j]; d.hw > maxHW {
					maxHW, hwEpoch = d.hw, d.epoch
				}
				if d := byDone[j]; d.ls > maxLS {
					maxLS = d.ls
				}
			}
			if c.opts.AllowSuffixLoss {
				continue
			}
			if o.hw >= 0 && o.hw < maxHW && !(c.opts.AllowHWRegressOnEpochChange && o.epoch > hwEpoch && hwEpoch >= 0) {
				c.violate(VHWRegress, "%s: %s saw high watermark %d (seq %d) after %d", k.tp, k.process, o.hw, o.done, maxHW)
			}
			if o.ls >= 0 && o.ls < maxLS {
				c.violate(VLogStartRegress, "%s: %s saw log start %d (seq %d) after %d", k.tp, k.process, o.ls, o.done, maxLS)
			}
		}
	}
}

// checkCommits: one process's acknowledged commits for a group and partition never go
// back, in the order it sent them; and a committed-offset observation (OffsetFetch) invoked
// after an acknowledged commit completed is not below it (unless AllowSuffixLoss, where a
// power loss may take __consumer_offsets writes with it).
func (c *Checker) checkCommits() {
	for _, k := range sortedGTPs(c.commits) {
		cs := slices.Clone(c.commits[k])
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].inv < cs[j].inv })
		last := map[string]commitObs{}
		for _, o := range cs {
			if l, ok := last[o.process]; ok && o.offset < l.offset {
				c.violate(VCommitRegress, "group %s %s: %s committed %d (seq %d) after committing %d", k.group, k.tp, o.process, o.offset, o.done, l.offset)
			}
			last[o.process] = o
		}
	}
	if c.opts.AllowSuffixLoss {
		return
	}
	for _, k := range sortedGTPs(c.committed) {
		cs := slices.Clone(c.commits[k])
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].done < cs[j].done })
		obs := slices.Clone(c.committed[k])
		sort.SliceStable(obs, func(i, j int) bool { return obs[i].inv < obs[j].inv })
		max, j := int64(-1), 0
		for _, o := range obs {
			for ; j < len(cs) && cs[j].done < o.inv; j++ {
				if cs[j].offset > max {
					max = cs[j].offset
				}
			}
			if o.offset < max {
				c.violate(VCommitRegress, "group %s %s: %s read committed offset %d (seq %d) after a commit of %d was acknowledged", k.group, k.tp, o.process, o.offset, o.done, max)
			}
		}
	}
}
