package history

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// simulate runs a correct single-partition log: producers send unique values; each send is
// acknowledged, fails definitely (not stored), fails indefinitely or ends unknown (stored
// or not, once, possibly by a retry after the error), and a consumer polls what is below
// the high watermark. It returns the history and the final read.
func simulate(t *rapid.T) ([]Op, Final) {
	r := NewMemoryRecorder()
	var log []Record
	hw := int64(0)
	cpos := int64(0)
	var late []Record // indefinite failures stored later by an idempotent retry
	n := rapid.IntRange(1, 40).Draw(t, "n")
	for i := range n {
		proc := fmt.Sprintf("p%d", rapid.IntRange(0, 2).Draw(t, "proc"))
		v := fmt.Sprintf("%s-%06d", proc, i)
		op := NewOp(proc, KindProduce, topic, 0)
		op.Value = v
		id := r.Invoke(op)
		switch rapid.IntRange(0, 5).Draw(t, "outcome") {
		case 0, 1, 2: // acknowledged
			off := int64(len(log))
			log = append(log, Record{Offset: off, Value: v})
			r.Complete(id, OK, func(o *Op) { o.Offset = off })
		case 3:
			r.Complete(id, Fail, func(o *Op) { o.Definite = true; o.Error = "MESSAGE_TOO_LARGE" })
		case 4:
			stored := rapid.Bool().Draw(t, "stored")
			if stored {
				log = append(log, Record{Offset: int64(len(log)), Value: v})
			}
			r.Complete(id, Fail, func(o *Op) { o.Error = "REQUEST_TIMED_OUT" })
		case 5:
			r.Complete(id, Unknown, nil)
			if rapid.Bool().Draw(t, "retried") {
				late = append(late, Record{Value: v})
			}
		}
		if len(late) > 0 && rapid.Bool().Draw(t, "flush-late") {
			l := late[0]
			late = late[1:]
			l.Offset = int64(len(log))
			log = append(log, l)
		}
		if rapid.Bool().Draw(t, "advance-hw") {
			hw = int64(len(log))
			ObserveOffsets(r, "c1", topic, 0, 0, hw, 1)
		}
		if rapid.Bool().Draw(t, "poll") && cpos < hw {
			end := rapid.Int64Range(cpos+1, hw).Draw(t, "poll-end")
			op := NewOp("c1", KindPoll, topic, 0)
			op.HW = hw
			op.Records = append([]Record(nil), log[cpos:end]...)
			r.Observe(op)
			cpos = end
			id := InvokeCommit(r, "c1", "g", topic, 0, cpos)
			CompleteCommit(r, id, nil)
		}
	}
	return r.Ops(), final(log...)
}

func TestPropertyCorrectLogIsValid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ops, f := simulate(t)
		mode := rapid.SampledFrom([]Options{{Mode: Strict}, {Mode: WriteCaching}, {Mode: Acks1},
			{Mode: WriteCaching, AllowSuffixLoss: true}}).Draw(t, "mode")
		if res := Check(ops, f, mode); !res.Valid() {
			t.Fatalf("%s\n%v", res.Summary, res.Violations())
		}
	})
}

// One random corruption of a correct history must be caught by the strict checker.
func TestPropertyCorruptionIsCaught(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ops, f := simulate(t)
		fp := f[tp0]
		recs := append([]Record(nil), fp.Records...)
		var acked, definite []Op
		var polls []int
		for i, op := range ops {
			switch {
			case op.Kind == KindProduce && op.Phase == OK:
				acked = append(acked, op)
			case op.Kind == KindProduce && op.Phase == Fail && op.Definite:
				definite = append(definite, op)
			case op.Kind == KindPoll && len(op.Records) > 0:
				polls = append(polls, i)
			}
		}
		var want string
		var choices []string
		if len(acked) > 0 {
			choices = append(choices, "drop-acked", "swap-value")
		}
		if len(recs) > 0 {
			choices = append(choices, "duplicate", "phantom")
		}
		if len(definite) > 0 {
			choices = append(choices, "store-failed")
		}
		if len(polls) > 0 {
			choices = append(choices, "poll-above-hw", "poll-repeat")
		}
		choices = append(choices, "hw-back")
		switch c := rapid.SampledFrom(choices).Draw(t, "corruption"); c {
		case "drop-acked": // lose one acknowledged write: remove it from the final read
			a := rapid.SampledFrom(acked).Draw(t, "victim")
			var out []Record
			for _, r := range recs {
				if r.Value != a.Value {
					out = append(out, r)
				}
			}
			recs, want = out, VLost
		case "swap-value": // the acked offset holds another value in the final read
			a := rapid.SampledFrom(acked).Draw(t, "victim")
			for i := range recs {
				if recs[i].Offset == a.Offset {
					recs[i].Value = "intruder"
				}
			}
			want = VLost // and inconsistent, phantom
		case "duplicate":
			r := rapid.SampledFrom(recs).Draw(t, "dup")
			r.Offset = int64(len(recs))
			recs, want = append(recs, r), VDuplicate
		case "phantom":
			recs, want = append(recs, Record{Offset: int64(len(recs)), Value: "never-written"}), VPhantom
		case "store-failed":
			d := rapid.SampledFrom(definite).Draw(t, "failed")
			recs, want = append(recs, Record{Offset: int64(len(recs)), Value: d.Value}), VFailedRead
		case "poll-above-hw":
			i := rapid.SampledFrom(polls).Draw(t, "poll")
			op := ops[i]
			op.HW = op.Records[len(op.Records)-1].Offset
			ops[i], want = op, VAboveHW
		case "poll-repeat":
			i := rapid.SampledFrom(polls).Draw(t, "poll")
			op := ops[i]
			op.Seq = int64(len(ops) + 1)
			op.HW = -1
			op.LogStart = -1
			ops, want = append(ops, op), VNonMonoPoll
		case "hw-back":
			op := NewOp("c1", KindOffsets, topic, 0)
			op.Seq, op.ID, op.Phase, op.HW, op.LogStart = int64(len(ops)+1), 1<<40, OK, 1000, 0
			op2 := op
			op2.Seq, op2.ID, op2.HW = op.Seq+1, op.ID+1, 999
			ops, want = append(ops, op, op2), VHWRegress
		}
		res := Check(ops, Final{tp0: {LogStart: 0, Records: recs}}, Options{Mode: Strict})
		if res.Valid() || res.Count(want) == 0 {
			t.Fatalf("corruption not caught as %s: %s", want, res.Summary)
		}
	})
}
