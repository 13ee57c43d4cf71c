package history

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

var txnOpts = Options{Mode: Txn, ReadCommitted: map[string]bool{"rc0": true, "rc1": true}}

// tval is the value of record i of transaction txn, as the chaos workload makes them.
func tval(txn string, i int) string { return fmt.Sprintf("%s/%d", txn, i) }

// tpart says where record i of a transaction goes and at which offset it is stored.
type tpart struct {
	p   int32
	off int64
}

// begin records txn-begin of txn by proc and produces its records, acknowledged at at.
func (b *hb) begin(proc, txn string, at ...tpart) {
	recs := make([]*kgo.Record, len(at))
	for i, a := range at {
		recs[i] = &kgo.Record{Topic: topic, Partition: a.p, Key: []byte(txn), Value: []byte(tval(txn, i))}
	}
	BeginTxn(b.r, proc, txn, recs)
	for i, rec := range recs {
		id := InvokeTxnProduce(b.r, proc, txn, rec)
		rec.Offset = at[i].off
		CompleteProduce(b.r, id, rec, nil)
	}
}

// end records an EndTransaction of txn with decision and what it returned.
func (b *hb) end(proc, txn, decision string, err error) {
	CompleteTxnEnd(b.r, InvokeTxnEnd(b.r, proc, txn, decision, "chosen"), err)
}

// rc records a poll of partition p by proc that saw lso and read recs.
func (b *hb) rc(proc string, p int32, lso int64, recs ...Record) {
	op := NewOp(proc, KindPoll, topic, p)
	op.LSO, op.Records = &lso, recs // the high watermark unknown: its rule is not under test
	b.r.Observe(op)
}

func (b *hb) caught(proc string, p int32, pos int64) { CaughtUp(b.r, proc, topic, p, pos) }

// tfinal is a final read of partitions 0 and 1.
func tfinal(p0, p1 []Record) Final {
	return Final{{topic, 0}: {Records: p0}, {topic, 1}: {Records: p1}}
}

// wantKinds fails unless exactly the kinds given have violations.
func wantKinds(t *testing.T, res *Result, want ...string) {
	t.Helper()
	for _, k := range kinds {
		n := res.Count(k)
		if slices.Contains(want, k) && n == 0 {
			t.Errorf("want a %s violation, got none: %s", k, res.Summary)
		}
		if !slices.Contains(want, k) && n != 0 {
			t.Errorf("unexpected %s violation: %v", k, res.Violations())
		}
	}
}

// goodTxns is a valid session: "a" committed over two partitions, "b" aborted (its records
// stay in the log, read only by the read_uncommitted c0), "c" ambiguous and never seen;
// every marker takes an offset. The consumers caught up at the end.
func goodTxns() (*hb, Final) {
	b := newHB()
	b.begin("t0", "a", tpart{0, 0}, tpart{1, 0})
	b.end("t0", "a", TxnCommit, nil)
	b.begin("t0", "b", tpart{0, 2}, tpart{1, 2})
	b.end("t0", "b", TxnAbort, nil)
	b.begin("t1", "c", tpart{0, 4})
	b.end("t1", "c", TxnCommit, errors.New("broken pipe"))
	b.end("t1", "c", TxnAbort, nil)
	for _, proc := range []string{"rc0", "rc1"} {
		b.rc(proc, 0, 2, rec(0, tval("a", 0)))
		b.rc(proc, 1, 2, rec(0, tval("a", 1)))
		b.rc(proc, 0, 6)
		b.caught(proc, 0, 6)
		b.caught(proc, 1, 4)
	}
	b.rc("c0", 0, 6, rec(0, tval("a", 0)), rec(2, tval("b", 0)), rec(4, tval("c", 0)))
	return b, tfinal([]Record{rec(0, tval("a", 0)), rec(2, tval("b", 0)), rec(4, tval("c", 0))},
		[]Record{rec(0, tval("a", 1)), rec(2, tval("b", 1))})
}

func TestTxnGoodHistory(t *testing.T) {
	b, f := goodTxns()
	res := check(t, b, f, txnOpts)
	wantValid(t, res)
	want := TxnSummary{Begun: 3, Committed: 1, Aborted: 1, Ambiguous: 1}
	if res.Summary.Txns != want {
		t.Errorf("txns %+v, want %+v", res.Summary.Txns, want)
	}
	if s := res.Summary.String(); !strings.Contains(s, "txns=3 committed=1 aborted=1 ambiguous=1") || !strings.Contains(s, "txn-missing=0") {
		t.Errorf("summary %q lacks the transactions", s)
	}
	if s := (Summary{Counts: map[string]int{}}).String(); strings.Contains(s, "txn") || strings.Contains(s, "lso") {
		t.Errorf("a session without transactions shows their counters: %q", s)
	}
}

func TestTxnCommittedReadWhole(t *testing.T) {
	b := newHB()
	b.begin("t0", "a", tpart{0, 0}, tpart{1, 0})
	b.end("t0", "a", TxnCommit, nil)
	b.rc("rc0", 0, 2, rec(0, tval("a", 0)))
	b.caught("rc0", 0, 2)
	b.caught("rc0", 1, 2) // caught up with partition 1 without reading a/1
	f := tfinal([]Record{rec(0, tval("a", 0))}, []Record{rec(0, tval("a", 1))})
	wantKinds(t, check(t, b, f, txnOpts), VTxnMissing)

	// A consumer that never caught up with partition 1 is not judged there.
	b = newHB()
	b.begin("t0", "a", tpart{0, 0}, tpart{1, 0})
	b.end("t0", "a", TxnCommit, nil)
	b.rc("rc0", 0, 2, rec(0, tval("a", 0)))
	b.caught("rc0", 0, 2)
	wantValid(t, check(t, b, f, txnOpts))
}

func TestTxnDupRead(t *testing.T) {
	b := newHB()
	b.begin("t0", "a", tpart{0, 0})
	b.end("t0", "a", TxnCommit, nil)
	b.rc("rc0", 0, 2, rec(0, tval("a", 0)))
	b.rc("rc0", 0, 4, rec(2, tval("a", 0))) // the same committed record again, at another offset
	b.caught("rc0", 0, 4)
	f := tfinal([]Record{rec(0, tval("a", 0)), rec(2, tval("a", 0))}, nil)
	// The value stored twice is also the dup rule's; the txn rule names the consumer.
	wantKinds(t, check(t, b, f, txnOpts), VTxnDup, VDuplicate)
}

func TestTxnAbortedRead(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(b *hb)
	}{
		{"abort ok", func(b *hb) { b.end("t0", "b", TxnAbort, nil) }},
		{"abort failed", func(b *hb) { b.end("t0", "b", TxnAbort, errors.New("broken pipe")) }},
		{"commit failed definitely", func(b *hb) { b.end("t0", "b", TxnCommit, kerr.OperationNotAttempted) }},
		{"never ended", func(b *hb) {}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mk := func(reader string) *hb {
				b := newHB()
				b.begin("t0", "b", tpart{0, 0})
				c.end(b)
				b.rc(reader, 0, 2, rec(0, tval("b", 0)))
				return b
			}
			f := tfinal([]Record{rec(0, tval("b", 0))}, nil)
			res := check(t, mk("rc0"), f, txnOpts)
			wantKinds(t, res, VTxnAborted)
			if res.Summary.Txns.Aborted != 1 {
				t.Errorf("txns %+v, want one aborted", res.Summary.Txns)
			}
			// read_uncommitted may see it.
			wantValid(t, check(t, mk("c0"), f, txnOpts))
		})
	}
}

func TestTxnAmbiguousAllOrNothing(t *testing.T) {
	mk := func(rc1Reads int) *hb {
		b := newHB()
		b.begin("t0", "c", tpart{0, 0}, tpart{1, 0})
		b.end("t0", "c", TxnCommit, errors.New("i/o timeout"))
		b.end("t0", "c", TxnAbort, nil) // settles nothing
		b.rc("rc0", 0, 2, rec(0, tval("c", 0)))
		b.rc("rc0", 1, 2, rec(0, tval("c", 1)))
		if rc1Reads > 0 {
			b.rc("rc1", 0, 2, rec(0, tval("c", 0)))
		}
		if rc1Reads > 1 {
			b.rc("rc1", 1, 2, rec(0, tval("c", 1)))
		}
		for _, proc := range []string{"rc0", "rc1"} {
			b.caught(proc, 0, 2)
			b.caught(proc, 1, 2)
		}
		return b
	}
	f := tfinal([]Record{rec(0, tval("c", 0))}, []Record{rec(0, tval("c", 1))})
	res := check(t, mk(2), f, txnOpts)
	wantValid(t, res)
	if res.Summary.Txns.Ambiguous != 1 || res.Summary.Txns.Visible != 1 {
		t.Errorf("txns %+v, want one ambiguous and visible", res.Summary.Txns)
	}
	wantKinds(t, check(t, mk(1), f, txnOpts), VTxnPartial) // rc1 read half
	wantKinds(t, check(t, mk(0), f, txnOpts), VTxnPartial) // rc0 saw it, rc1 did not

	// Seen by nobody: aborted as far as anyone can tell, which is allowed.
	b := newHB()
	b.begin("t0", "c", tpart{0, 0}, tpart{1, 0})
	b.end("t0", "c", TxnCommit, errors.New("i/o timeout"))
	b.caught("rc0", 0, 2)
	b.caught("rc0", 1, 2)
	wantValid(t, check(t, b, f, txnOpts))

	// A commit still in flight when the history ended is ambiguous too.
	b = newHB()
	b.begin("t0", "c", tpart{0, 0})
	InvokeTxnEnd(b.r, "t0", "c", TxnCommit, "chosen")
	b.rc("rc0", 0, 2, rec(0, tval("c", 0)))
	if res := check(t, b, tfinal([]Record{rec(0, tval("c", 0))}, nil), txnOpts); !res.Valid() || res.Summary.Txns.Ambiguous != 1 {
		t.Errorf("an unanswered commit: %s %v", res.Summary, res.Violations())
	}
}

func TestTxnEarlyRead(t *testing.T) {
	mk := func(early bool) *hb {
		b := newHB()
		b.begin("t0", "a", tpart{0, 0})
		if early {
			b.rc("rc0", 0, 2, rec(0, tval("a", 0)))
		}
		b.end("t0", "a", TxnCommit, nil)
		if !early {
			b.rc("rc0", 0, 2, rec(0, tval("a", 0)))
		}
		b.caught("rc0", 0, 2)
		return b
	}
	f := tfinal([]Record{rec(0, tval("a", 0))}, nil)
	wantValid(t, check(t, mk(false), f, txnOpts))
	wantKinds(t, check(t, mk(true), f, txnOpts), VTxnEarly)
}

func TestLSORegress(t *testing.T) {
	mk := func(second int64) *hb {
		b := newHB()
		b.rc("rc0", 0, 5)
		b.rc("rc1", 0, 2) // another consumer behind is no regress
		b.rc("rc0", 1, 1) // nor another partition
		b.rc("rc0", 0, second)
		return b
	}
	wantValid(t, check(t, mk(5), nil, txnOpts))
	wantValid(t, check(t, mk(7), nil, txnOpts))
	wantKinds(t, check(t, mk(3), nil, txnOpts), VLSORegress)
	// read_uncommitted consumers see the LSO too, and are held to it as well.
	b := newHB()
	b.rc("c0", 0, 5)
	b.rc("c0", 0, 4)
	wantKinds(t, check(t, b, nil, txnOpts), VLSORegress)
}

func TestAboveLSO(t *testing.T) {
	mk := func(reader string, lso int64) *hb {
		b := newHB()
		b.begin("t0", "a", tpart{0, 0})
		b.end("t0", "a", TxnCommit, nil)
		op := NewOp(reader, KindPoll, topic, 0)
		op.HW, op.LSO, op.Records = 2, &lso, []Record{rec(0, tval("a", 0))}
		b.r.Observe(op)
		return b
	}
	f := tfinal([]Record{rec(0, tval("a", 0))}, nil)
	wantValid(t, check(t, mk("rc0", 1), f, txnOpts))
	wantKinds(t, check(t, mk("rc0", 0), f, txnOpts), VAboveLSO)
	wantValid(t, check(t, mk("c0", 0), f, txnOpts)) // read_uncommitted reads past the LSO
}

func TestTxnMalformed(t *testing.T) {
	b := newHB()
	b.begin("t0", "a", tpart{0, 0})
	rec := &kgo.Record{Topic: topic, Value: []byte("stray"), Offset: 1}
	CompleteProduce(b.r, InvokeTxnProduce(b.r, "t0", "a", rec), rec, nil)
	b.end("t0", "zz", TxnCommit, nil)
	BeginTxn(b.r, "t0", "a", nil)
	wantKinds(t, check(t, b, tfinal([]Record{{Offset: 0, Value: tval("a", 0)}, {Offset: 1, Value: "stray"}}, nil), txnOpts), VMalformed)
}

func TestDefiniteTxnEndError(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{kerr.OperationNotAttempted, true},
		{fmt.Errorf("x: %w, %w", kerr.TransactionAbortable, kerr.UnknownTopicID), true},
		{kerr.TransactionAbortable, false},
		{kerr.ProducerFenced, false},
		{kerr.InvalidTxnState, false},
		{kerr.RequestTimedOut, false},
		{errors.New("broken pipe"), false},
	} {
		if got := DefiniteTxnEndError(c.err); got != c.want {
			t.Errorf("%v: got %v", c.err, got)
		}
	}
	b := newHB()
	b.begin("t0", "a", tpart{0, 0})
	b.end("t0", "a", TxnAbort, kerr.OperationNotAttempted)
	if ops := b.r.Ops(); ops[len(ops)-1].Definite {
		t.Error("a failed abort marked definite; only a commit's failure can be")
	}
}

func TestTxnHistoryFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	r, err := CreateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, f := goodTxns()
	for _, op := range b.r.Ops() {
		r.Append(op)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	ops, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if slices.IndexFunc(ops, func(op Op) bool { return op.LSO != nil && *op.LSO == 6 }) < 0 {
		t.Error("the LSO did not survive the file")
	}
	res, err := CheckFile(path, f, txnOpts)
	if err != nil {
		t.Fatal(err)
	}
	wantValid(t, res)
	if res.Summary.Txns.Begun != 3 {
		t.Errorf("txns %+v", res.Summary.Txns)
	}
	// The file judged with the first reader's reads taken out is missing "a".
	bad := slices.DeleteFunc(slices.Clone(ops), func(op Op) bool { return op.Process == "rc0" && op.Kind == KindPoll && len(op.Records) > 0 })
	wantKinds(t, Check(bad, f, txnOpts), VTxnMissing)
}

func TestRecordTxnFetches(t *testing.T) {
	r := NewMemoryRecorder()
	st := NewTxnFetchState()
	fetch := func(lso, hw int64, offs ...int64) kgo.Fetches {
		p := kgo.FetchPartition{Partition: 0, HighWatermark: hw, LastStableOffset: lso}
		for _, o := range offs {
			p.Records = append(p.Records, &kgo.Record{Topic: topic, Offset: o, Value: []byte(fmt.Sprint(o))})
		}
		return kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: topic, Partitions: []kgo.FetchPartition{p}}}}}
	}
	RecordTxnFetches(r, "rc0", fetch(3, 4, 0, 1), st)
	RecordTxnFetches(r, "rc0", fetch(3, 4), st) // nothing new: not recorded
	RecordTxnFetches(r, "rc0", fetch(4, 4), st) // the LSO moved: recorded
	RecordTxnFetches(r, "rc0", fetch(-1, 4), st)
	ops := r.Ops()
	if len(ops) != 3 || len(ops[0].Records) != 2 || *ops[0].LSO != 3 || *ops[1].LSO != 4 || ops[2].LSO != nil {
		t.Fatalf("recorded %+v", ops)
	}
	if st.Pos[TP{topic, 0}] != 2 {
		t.Errorf("position %d, want 2", st.Pos[TP{topic, 0}])
	}
}
