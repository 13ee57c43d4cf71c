package history

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const topic = "t"

var tp0 = TP{topic, 0}

// hb builds histories by hand, on a clock that moves 1ms at each entry.
type hb struct{ r *Recorder }

func newHB() *hb {
	r := NewMemoryRecorder()
	clock := time.Date(2026, 12, 1, 18, 35, 0, 0, time.UTC)
	r.now = func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	return &hb{r}
}

// restart records the restart marker of fault name, its brokers up from now.
func (b *hb) restart(name string) { b.r.Restart(name, b.r.now()) }

func (b *hb) send(proc, v string) int64 {
	op := NewOp(proc, KindProduce, topic, 0)
	op.Value = v
	return b.r.Invoke(op)
}
func (b *hb) ok(id, off int64) { b.r.Complete(id, OK, func(o *Op) { o.Offset = off }) }
func (b *hb) fail(id int64, definite bool) {
	b.r.Complete(id, Fail, func(o *Op) { o.Definite = definite; o.Error = "boom" })
}
func (b *hb) produce(proc, v string, off int64) { b.ok(b.send(proc, v), off) }
func (b *hb) poll(proc string, hw int64, recs ...Record) {
	op := NewOp(proc, KindPoll, topic, 0)
	op.HW, op.Records = hw, recs
	b.r.Observe(op)
}
func (b *hb) offsets(proc string, ls, hw int64, epoch int32) {
	ObserveOffsets(b.r, proc, topic, 0, ls, hw, epoch)
}
func (b *hb) commit(proc string, off int64) {
	CompleteCommit(b.r, InvokeCommit(b.r, proc, "g", topic, 0, off), nil)
}
func (b *hb) committed(proc string, off int64) {
	op := NewOp(proc, KindCommitted, topic, 0)
	op.Group = "g"
	ObserveCommitted(b.r, b.r.Invoke(op), off)
}

func rec(off int64, v string) Record { return Record{Offset: off, Value: v} }

func final(recs ...Record) Final { return Final{tp0: {LogStart: 0, Records: recs}} }

func check(t *testing.T, b *hb, f Final, opts Options) *Result {
	t.Helper()
	if err := b.r.Err(); err != nil {
		t.Fatal(err)
	}
	return Check(b.r.Ops(), f, opts)
}

func wantOnly(t *testing.T, res *Result, kind string) {
	t.Helper()
	for _, k := range kinds {
		n := res.Count(k)
		if k == kind && n == 0 {
			t.Errorf("want a %s violation, got none: %s", kind, res.Summary)
		}
		if k != kind && n != 0 {
			t.Errorf("unexpected %s violation: %v", k, res.Violations())
		}
	}
}

func wantValid(t *testing.T, res *Result) {
	t.Helper()
	if !res.Valid() {
		t.Errorf("want valid, got %s\n%s", res.Summary, strings.Join(res.Violations(), "\n"))
	}
}

var strict = Options{Mode: Strict}

func TestGoodHistory(t *testing.T) {
	b := newHB()
	b.produce("p1", "a", 0)
	b.produce("p1", "b", 1)
	b.poll("c1", 2, rec(0, "a"), rec(1, "b"))
	b.offsets("c1", 0, 2, 1)
	b.commit("c1", 2)
	b.committed("c2", 2)
	res := check(t, b, final(rec(0, "a"), rec(1, "b")), strict)
	wantValid(t, res)
	if s := res.Summary; s.Acked != 2 || s.Checked != 2 || s.Reads != 2 {
		t.Errorf("summary %s", s)
	}
	if !strings.Contains(res.Summary.String(), "ops=10 faults=0 acked=2 checked=2") {
		t.Errorf("summary line %q", res.Summary)
	}
}

func TestLost(t *testing.T) {
	b := newHB()
	b.produce("p1", "a", 0)
	b.produce("p1", "b", 1)
	wantOnly(t, check(t, b, final(rec(0, "a")), strict), VLost)
	wantOnly(t, check(t, b, final(rec(0, "a")), Options{Mode: WriteCaching}), VLost)
	res := check(t, b, final(rec(0, "a")), Options{Mode: Acks1})
	wantValid(t, res)
	if res.Summary.Lost != 1 || res.Summary.LostOK != 1 {
		t.Errorf("acks1 lost counted %s", res.Summary)
	}
	// Below the final log start: unverifiable, not lost.
	res = check(t, b, Final{tp0: {LogStart: 2}}, strict)
	wantValid(t, res)
	if res.Summary.Unverified != 2 {
		t.Errorf("unverified %s", res.Summary)
	}
}

func TestAcks1OffsetReuseIsNotInconsistent(t *testing.T) {
	b := newHB()
	b.produce("p1", "a", 0) // acked by the old leader, lost in the failover
	b.produce("p2", "b", 0) // the new leader reuses the offset
	res := check(t, b, final(rec(0, "b")), Options{Mode: Acks1})
	wantValid(t, res)
	// but two reads disagreeing is never allowed
	b.poll("c1", 1, rec(0, "a"))
	wantOnly(t, check(t, b, final(rec(0, "b")), Options{Mode: Acks1}), VInconsistent)
}

func TestSuffixLoss(t *testing.T) {
	opts := Options{Mode: WriteCaching, AllowSuffixLoss: true}
	b := newHB()
	b.produce("p1", "a", 0)
	b.produce("p1", "b", 1)
	b.produce("p1", "c", 2)
	wantValid(t, check(t, b, final(rec(0, "a")), opts))
	res := check(t, b, final(rec(0, "a"), rec(2, "c")), opts) // b lost below surviving c
	wantOnly(t, res, VSuffixHole)

	// With fault markers, writes after the power loss may reuse the freed offsets.
	b = newHB()
	b.produce("p1", "a", 0)
	b.produce("p1", "b", 1)
	b.poll("c1", 2, rec(0, "a"), rec(1, "b"))
	b.r.Fault("power-majority", true)
	b.r.Append(Op{Process: "c1", Kind: KindSeek, Topic: topic})
	b.produce("p1", "c", 1)
	b.produce("p1", "d", 2)
	good := final(rec(0, "a"), rec(1, "c"), rec(2, "d"))
	res = check(t, b, good, opts)
	wantValid(t, res)
	if res.Summary.LostOK != 1 {
		t.Errorf("summary %s", res.Summary)
	}
	// The same history in strict mode is loss, and the read of b vanished.
	res = check(t, b, good, strict)
	if res.Count(VLost) != 1 || res.Count(VInconsistent) == 0 || res.Count(VNonMonoSend) != 1 {
		t.Errorf("strict: %s", res.Summary)
	}
	// A loss with no lossy fault after its acknowledgement is not explained.
	b.produce("p1", "e", 3)
	wantOnly(t, check(t, b, good, opts), VLost)
}

// TestSuffixLossFaultWindow: a lost write is held to the lossy fault whose window (marker
// to restart marker) had not closed when it was acknowledged, never to a later one because
// of its acknowledgement alone, nor to an earlier one because of its send. Each history
// starts with a surviving write a at offset 0 and has x lost.
func TestSuffixLossFaultWindow(t *testing.T) {
	opts := Options{Mode: WriteCaching, AllowSuffixLoss: true}
	const power = "power [2 3]"
	onlyA := final(rec(0, "a"))
	// y and z reuse the offsets the power cut freed, and survive.
	reused := final(rec(0, "a"), rec(1, "y"), rec(2, "z"))
	reuse := func(b *hb) {
		b.produce("p1", "y", 1)
		b.produce("p1", "z", 2)
	}
	for _, tc := range []struct {
		name  string
		build func(b *hb)
		final Final
		want  string // a violation kind, "" for valid
	}{
		{"acknowledged late inside the window", func(b *hb) {
			x := b.send("p2", "x")
			b.r.Fault(power, true)
			b.ok(x, 1) // on a majority report sent before the cut, delivered late
			b.restart(power)
			reuse(b) // the power-cut brokers replaced the tail
			b.r.Fault(power, true)
			b.restart(power)
		}, reused, ""},
		{"an older history without restart markers", func(b *hb) {
			// Dated after the first cut by its acknowledgement, x is held to the second
			// one, and z, acknowledged before that, makes a hole.
			x := b.send("p2", "x")
			b.r.Fault(power, true)
			b.ok(x, 1)
			reuse(b)
			b.r.Fault(power, true)
		}, reused, VSuffixHole},
		{"a restart of another fault closes no window", func(b *hb) {
			x := b.send("p2", "x")
			b.r.Fault(power, true)
			b.ok(x, 1)
			b.restart("power [1 3]")
			reuse(b)
			b.r.Fault(power, true)
		}, reused, VSuffixHole},
		{"retried across the fault, acknowledged after it", func(b *hb) {
			// Acknowledged by the new leader after the restart, with no lossy fault
			// after it: the loss is unexplained.
			x := b.send("p2", "x")
			b.r.Fault(power, true)
			b.restart(power)
			b.ok(x, 1)
		}, onlyA, VLost},
		{"recorded before the restart marker, acknowledged after the brokers were up", func(b *hb) {
			// The marker goes in once the brokers are ready, later than they could
			// first replicate: an acknowledgement between the two is after the window.
			x := b.send("p2", "x")
			b.r.Fault(power, true)
			up := b.r.now()
			b.ok(x, 1)
			b.r.Restart(power, up)
		}, onlyA, VLost},
		{"sent and acknowledged after the restart", func(b *hb) {
			b.r.Fault(power, true)
			b.restart(power)
			b.produce("p2", "x", 1)
		}, onlyA, VLost},
		{"sent and acknowledged while a majority is down", func(b *hb) {
			// Nothing sent after the cut can be majority-replicated before the restart,
			// so no fault explains its loss, however many come later.
			b.r.Fault(power, true)
			b.produce("p2", "x", 1)
			b.restart(power)
			b.r.Fault(power, true)
			b.restart(power)
		}, onlyA, VLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newHB()
			b.produce("p1", "a", 0)
			tc.build(b)
			res := check(t, b, tc.final, opts)
			if tc.want != "" {
				wantOnly(t, res, tc.want)
				return
			}
			wantValid(t, res)
			if res.Summary.LostOK != 1 {
				t.Errorf("want x lost and allowed: %s", res.Summary)
			}
		})
	}
}

func TestInconsistent(t *testing.T) {
	b := newHB()
	b.produce("p1", "a", 0)
	b.produce("p1", "b", 1)
	b.poll("c1", 2, rec(0, "a"))
	b.poll("c2", 2, rec(0, "b"))
	res := check(t, b, final(rec(0, "a"), rec(1, "b")), strict)
	if res.Count(VInconsistent) != 1 || res.Count(VDuplicate) != 1 {
		t.Errorf("%s", res.Summary)
	}
}

func TestDuplicate(t *testing.T) {
	b := newHB()
	id := b.send("p1", "a")
	b.fail(id, false) // indeterminate: may be stored, but once
	b.produce("p1", "b", 2)
	wantValid(t, check(t, b, final(rec(0, "a"), rec(1, "x"), rec(2, "b")), Options{Mode: Strict}).withPhantomOK(t))
	wantOnly(t, check(t, b, final(rec(0, "a"), rec(1, "a"), rec(2, "b")), strict), VDuplicate)
	// acks=1 producers are not idempotent: a retried batch may be stored twice.
	res := check(t, b, final(rec(0, "a"), rec(1, "a"), rec(2, "b")), Options{Mode: Acks1})
	wantValid(t, res)
	if res.Summary.DupOK != 1 {
		t.Fatalf("acks1 duplicate not counted as allowed: %s", res.Summary)
	}
}

// withPhantomOK drops phantom counts, for histories whose filler values were never produced.
func (r *Result) withPhantomOK(t *testing.T) *Result {
	t.Helper()
	delete(r.Summary.Counts, VPhantom)
	delete(r.details, VPhantom)
	return r
}

func TestNonMonotonicSends(t *testing.T) {
	b := newHB()
	b.produce("p1", "a", 1)
	b.produce("p1", "b", 0)
	wantOnly(t, check(t, b, final(rec(0, "b"), rec(1, "a")), strict), VNonMonoSend)
	b = newHB()
	b.produce("p1", "a", 1)
	b.produce("p2", "b", 0) // another producer: no order between them
	wantValid(t, check(t, b, final(rec(0, "b"), rec(1, "a")), strict))
}

func TestNonMonotonicPolls(t *testing.T) {
	b := newHB()
	b.produce("p1", "a", 0)
	b.produce("p1", "b", 1)
	b.poll("c1", 2, rec(0, "a"), rec(1, "b"))
	b.poll("c2", 2, rec(0, "a")) // another consumer
	b.r.Append(Op{Process: "c1", Kind: KindSeek, Topic: topic})
	b.poll("c1", 2, rec(0, "a")) // after a seek
	f := final(rec(0, "a"), rec(1, "b"))
	wantValid(t, check(t, b, f, strict))
	b.poll("c1", 2, rec(1, "b"), rec(1, "b"))
	wantOnly(t, check(t, b, f, strict), VNonMonoPoll)
}

func TestAboveHW(t *testing.T) {
	b := newHB()
	b.produce("p1", "a", 0)
	b.produce("p1", "b", 1)
	b.poll("c1", -1, rec(0, "a"), rec(1, "b")) // unknown: not checked
	b.poll("c2", 2, rec(0, "a"), rec(1, "b"))
	f := final(rec(0, "a"), rec(1, "b"))
	wantValid(t, check(t, b, f, strict))
	b.poll("c3", 1, rec(0, "a"), rec(1, "b"))
	wantOnly(t, check(t, b, f, strict), VAboveHW)
}

func TestFailedRead(t *testing.T) {
	b := newHB()
	b.produce("p1", "a", 0)
	id := b.send("p1", "b")
	b.fail(id, false)
	f := final(rec(0, "a"), rec(1, "b"))
	wantValid(t, check(t, b, f, strict)) // an indefinite failure may be stored
	b = newHB()
	b.produce("p1", "a", 0)
	b.fail(b.send("p1", "b"), true)
	wantValid(t, check(t, b, final(rec(0, "a")), strict))
	wantOnly(t, check(t, b, f, strict), VFailedRead)
	b.poll("c1", 2, rec(1, "b"))
	if n := check(t, b, f, strict).Count(VFailedRead); n != 1 {
		t.Errorf("failed-read counted %d times, want once per offset", n)
	}
}

func TestPhantomAndVanished(t *testing.T) {
	b := newHB()
	b.produce("p1", "a", 0)
	wantOnly(t, check(t, b, final(rec(0, "a"), rec(1, "zzz")), strict), VPhantom)
	id := b.send("p1", "b")
	b.r.Complete(id, Unknown, nil)
	b.poll("c1", 2, rec(0, "a"), rec(1, "b"))
	wantOnly(t, check(t, b, final(rec(0, "a")), strict), VVanished)
	wantOnly(t, check(t, b, final(rec(0, "a")), Options{Mode: Acks1}), VVanished)
	wantValid(t, check(t, b, final(rec(0, "a")), Options{Mode: WriteCaching, AllowSuffixLoss: true}))
}

func TestHWAndLogStartRegress(t *testing.T) {
	b := newHB()
	b.offsets("c1", 0, 5, 1)
	b.offsets("c2", 0, 3, 1) // another client may lag
	b.offsets("c1", 1, 6, 1)
	wantValid(t, check(t, b, final(), strict))
	b.offsets("c1", 1, 4, 2)
	wantOnly(t, check(t, b, final(), strict), VHWRegress)
	wantValid(t, check(t, b, final(), Options{Mode: Strict, AllowHWRegressOnEpochChange: true}))
	wantValid(t, check(t, b, final(), Options{Mode: WriteCaching, AllowSuffixLoss: true}))
	b = newHB()
	b.offsets("c1", 3, 5, 1)
	b.offsets("c1", 2, 5, 1)
	wantOnly(t, check(t, b, final(), strict), VLogStartRegress)

	// Overlapping observations of one client are not ordered.
	b = newHB()
	op := NewOp("c1", KindOffsets, topic, 0)
	id := b.r.Invoke(op)
	b.offsets("c1", 0, 5, 1)
	b.r.Complete(id, OK, func(o *Op) { o.HW, o.LogStart = 4, 0 })
	wantValid(t, check(t, b, final(), strict))
	// A poll's high watermark counts too.
	b.poll("c1", 3)
	wantOnly(t, check(t, b, final(), strict), VHWRegress)
}

// A reader that moves between a leader and a follower (KIP-392) may see the high watermark
// move back, since a follower's trails its leader's; what it reads is still checked.
func TestFollowerReaders(t *testing.T) {
	b := newHB()
	b.produce("p1", "a", 0)
	b.produce("p1", "b", 1)
	b.poll("c-r2", 2, rec(0, "a"), rec(1, "b")) // from the leader
	b.poll("c-r2", 1)                           // then from a follower that trails it
	followers := Options{Mode: Strict, FollowerReaders: map[string]bool{"c-r2": true}}
	wantOnly(t, check(t, b, final(rec(0, "a"), rec(1, "b")), strict), VHWRegress)
	wantValid(t, check(t, b, final(rec(0, "a"), rec(1, "b")), followers))
	// A follower that served a record no one acknowledged, and that did not last (above
	// its leader's visible offset), is still caught.
	id := b.send("p1", "c")
	b.r.Complete(id, Unknown, nil)
	b.poll("c-r2", 3, rec(2, "c"))
	wantOnly(t, check(t, b, final(rec(0, "a"), rec(1, "b")), followers), VVanished)
}

func TestCommitRegress(t *testing.T) {
	b := newHB()
	b.commit("c1", 5)
	b.commit("c2", 3) // another member
	b.commit("c1", 7)
	b.committed("c3", 7)
	wantValid(t, check(t, b, final(), strict))
	b.commit("c1", 6)
	wantOnly(t, check(t, b, final(), strict), VCommitRegress)

	b = newHB()
	b.commit("c1", 5)
	b.committed("c2", 4)
	wantOnly(t, check(t, b, final(), strict), VCommitRegress)
	wantValid(t, check(t, b, final(), Options{Mode: WriteCaching, AllowSuffixLoss: true}))
}

func TestViolationsBounded(t *testing.T) {
	b := newHB()
	for i := range 50 {
		b.produce("p1", fmt.Sprint("v", i), int64(i))
	}
	res := check(t, b, final(), strict)
	if res.Count(VLost) != 50 {
		t.Fatalf("%s", res.Summary)
	}
	vs := res.Violations()
	if len(vs) != MaxDetails+1 || !strings.Contains(vs[MaxDetails], "and 30 more") {
		t.Errorf("violations %d: %q", len(vs), vs[len(vs)-1])
	}
}

func TestRecorderFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	r, err := CreateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	id := InvokeProduce(r, "p1", &kgo.Record{Topic: topic, Value: []byte("a")})
	CompleteProduce(r, id, &kgo.Record{Topic: topic, Partition: 0, Offset: 0, Value: []byte("a")}, nil)
	id = InvokeProduce(r, "p1", &kgo.Record{Topic: topic, Value: []byte("b")})
	ProducePromise(r, id)(&kgo.Record{Topic: topic}, kerr.MessageTooLarge)
	InvokeProduce(r, "p1", &kgo.Record{Topic: topic, Value: []byte("c")}) // in flight at Close
	r.Fault("kill", false)
	if r.Pending() != 1 {
		t.Errorf("pending %d", r.Pending())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	ops, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 7 || ops[6].Phase != Unknown || !ops[3].Definite || ops[3].Phase != Fail {
		t.Fatalf("loaded %+v", ops)
	}
	for i, op := range ops {
		if op.Seq != int64(i+1) {
			t.Errorf("seq %d at %d", op.Seq, i)
		}
	}
	res, err := CheckFile(path, final(rec(0, "a"), rec(1, "c")), strict)
	if err != nil {
		t.Fatal(err)
	}
	wantValid(t, res)
	if s := res.Summary; s.Acked != 1 || s.Definite != 1 || s.Indefinite != 1 || s.Faults != 1 {
		t.Errorf("%s", s)
	}
	// A torn last line is ignored.
	var buf bytes.Buffer
	NewRecorder(&buf) // unused, the API must not write on creation
	buf.WriteString(`{"seq":1,"id":1,"process":"p","kind":"fault","phase":"ok"}` + "\n" + `{"seq":2,"id`)
	ops, err = Load(&buf)
	if err != nil || len(ops) != 1 {
		t.Errorf("torn tail: %v %d", err, len(ops))
	}
}

func TestRecorderErrors(t *testing.T) {
	r := NewMemoryRecorder()
	r.Complete(42, OK, nil)
	if r.Err() == nil {
		t.Error("completing an unknown invocation is not reported")
	}
}

func TestDefiniteProduceError(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{kerr.MessageTooLarge, true},
		{fmt.Errorf("wrapped: %w", kerr.InvalidRecord), true},
		{kgo.ErrMaxBuffered, true},
		{kerr.NotEnoughReplicas, false}, // an earlier attempt may have been stored
		{kerr.NotLeaderForPartition, false},
		{kerr.RequestTimedOut, false},
		{kerr.CorruptMessage, false}, // retriable: earlier attempts may have been stored
		{kgo.ErrRecordTimeout, false},
		{kgo.ErrRecordRetries, false},
		{kgo.ErrClientClosed, false},
		{errors.New("context canceled"), false},
	} {
		if got := DefiniteProduceError(c.err); got != c.want {
			t.Errorf("%v: got %v", c.err, got)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"strict", "write-caching", "acks1", "txn"} {
		if _, err := ParseMode(s); err != nil {
			t.Error(err)
		}
	}
	if _, err := ParseMode("acks0"); err == nil {
		t.Error("acks0 accepted")
	}
}
